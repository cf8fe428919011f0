#!/usr/bin/env bash
# `make docker-up`: checks the host ports, starts docker/docker-compose.yml, waits until every
# container is healthy and prints how to reach the brokers.
# `make docker-up SECURE=1` (docker/up.sh --secure): the same cluster with SASL_SSL + SCRAM on every
# listener (docker/docker-compose.secure.yml over docker-compose.yml); its certificates and passwords
# are made first, on this machine, by docker/secure-setup.sh into $MAFKA_SECRETS_DIR.
# Env: MAFKA_PORT_1..3 (default 9092..9094), COMPOSE_PROJECT_NAME (default mafka),
#      MAFKA_SECRETS_DIR (--secure only; default build/docker-secure/$COMPOSE_PROJECT_NAME).
set -euo pipefail
cd "$(dirname "$0")"
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-mafka}
export MAFKA_PORT_1=${MAFKA_PORT_1:-9092} MAFKA_PORT_2=${MAFKA_PORT_2:-9093} MAFKA_PORT_3=${MAFKA_PORT_3:-9094}

secure=0
case "${1:-}" in
  --secure) secure=1 ;;
  "") ;;
  *) echo "usage: docker/up.sh [--secure]" >&2; exit 2 ;;
esac
files=(-f docker-compose.yml)
if [ $secure -eq 1 ]; then
  export MAFKA_SECRETS_DIR=${MAFKA_SECRETS_DIR:-$(cd .. && pwd)/build/docker-secure/$COMPOSE_PROJECT_NAME}
  bash secure-setup.sh "$MAFKA_SECRETS_DIR"
  MAFKA_SECRETS_DIR=$(cd "$MAFKA_SECRETS_DIR" && pwd)
  files+=(-f docker-compose.secure.yml)
fi
compose() { docker-compose "${files[@]}" "$@"; }

running=$(compose ps -q 2>/dev/null | wc -l)
if [ "$running" -eq 0 ]; then
  for var in MAFKA_PORT_1 MAFKA_PORT_2 MAFKA_PORT_3; do
    port=${!var}
    if ! python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$port" 2>/dev/null; then
      echo "docker-up: port $port ($var) is already in use; free it or choose another, e.g. make docker-up $var=$((port + 100))" >&2
      exit 1
    fi
  done
fi

if ! compose up -d; then
  if [ $secure -eq 1 ] && [ -n "$(compose ps -q scram-init 2>/dev/null)" ]; then
    echo "docker-up: the SCRAM credentials could not be written to ZooKeeper; scram-init said:" >&2
    compose logs --no-color scram-init >&2 || true
  fi
  exit 1
fi
echo "docker-up: waiting for the containers to be healthy"
deadline=$((SECONDS + 180))
while :; do
  # the services that run (not the secure variant's one-shot scram-init, which has exited by now)
  states=$(compose ps -q zk1 zk2 zk3 kafka1 kafka2 kafka3 \
           | xargs docker inspect -f '{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}')
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
for n in 1 2 3; do
  echo "  broker $n metrics:     http://$(compose port kafka$n 9404 | sed 's/^0\.0\.0\.0/127.0.0.1/')/metrics (kafka$n:9404 inside)"
done
echo "  console:             http://$(compose port console 9021 | sed 's/^0\.0\.0\.0/127.0.0.1/')/"
if [ $secure -eq 1 ]; then
  echo "  security:            SASL_SSL with SCRAM-SHA-512 on every listener, ACLs on (super users admin, broker)"
  echo "  CA certificate:      $MAFKA_SECRETS_DIR/pki/ca.pem"
  echo "  admin client config: $MAFKA_SECRETS_DIR/admin.properties (mafka CLI --command-config)"
  echo "                       $MAFKA_SECRETS_DIR/admin.conf (kcat -F, librdkafka)"
fi
echo "  stop:                make docker-down   (add DOWN_FLAGS=-v to delete the volumes too)"
