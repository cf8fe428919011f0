"""Tests against the docker-compose cluster (docker/docker-compose.yml)."""
