#!/usr/bin/env bash
# `make docker-up`: checks the host ports, starts docker/docker-compose.yml, waits until every
# container is healthy and prints how to reach the brokers.
# Env: MAFKA_PORT_1..3 (default 9092..9094), COMPOSE_PROJECT_NAME (default mafka).
set -euo pipefail
cd "$(dirname "$0")"
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-mafka}
export MAFKA_PORT_1=${MAFKA_PORT_1:-9092} MAFKA_PORT_2=${MAFKA_PORT_2:-9093} MAFKA_PORT_3=${MAFKA_PORT_3:-9094}

running=$(docker-compose ps -q 2>/dev/null | wc -l)
if [ "$running" -eq 0 ]; then
  for var in MAFKA_PORT_1 MAFKA_PORT_2 MAFKA_PORT_3; do
    port=${!var}
    if ! python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$port" 2>/dev/null; then
      echo "docker-up: port $port ($var) is already in use; free it or choose another, e.g. make docker-up $var=$((port + 100))" >&2
      exit 1
    fi
  done
fi

docker-compose up -d
echo "docker-up: waiting for the containers to be healthy"
deadline=$((SECONDS + 180))
while :; do
  states=$(docker-compose ps -q | xargs docker inspect -f '{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}')
  if ! grep -vq ' healthy$' <<<"$states"; then break; fi
  if [ $SECONDS -gt $deadline ]; then
    echo "docker-up: not healthy after 180 s:" >&2; echo "$states" >&2
    echo "(docker-compose -p $COMPOSE_PROJECT_NAME logs shows why)" >&2
    exit 1
  fi
  sleep 1
done
echo "docker-up: 3 ZooKeeper members and 3 brokers are healthy (project $COMPOSE_PROJECT_NAME)"
echo "  from the host:       bootstrap.servers=localhost:$MAFKA_PORT_1,localhost:$MAFKA_PORT_2,localhost:$MAFKA_PORT_3"
echo "  inside the network:  bootstrap.servers=kafka1:19092,kafka2:19092,kafka3:19092 (network ${COMPOSE_PROJECT_NAME}_mafka)"
echo "  stop:                make docker-down   (add DOWN_FLAGS=-v to delete the volumes too)"
