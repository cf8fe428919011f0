"""The docker-compose cluster (docker/docker-compose.yml) for its smoke test and the real-network fault table."""
