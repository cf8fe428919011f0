#!/usr/bin/env bash
# The secrets of the secured compose cluster (`make docker-up SECURE=1`), made on this machine at
# docker-up time and never committed: a throw-away PKI (tests/harness/certs.py), random SCRAM
# passwords for the brokers (`broker`) and the administrator (`admin`), and the client
# configurations that use them.  Made once per directory; a directory that is complete is left as
# it is, so a cluster keeps its certificates and passwords across `make docker-up` runs (delete
# the directory to get new ones; the next docker-up also rewrites the SCRAM credentials).
#
# Usage: docker/secure-setup.sh DIR        (docker/up.sh --secure runs it)
# Env: PYTHON (the host interpreter with `cryptography`; default .venv/bin/python),
#      MAFKA_ADVERTISED_HOST (a host name clients on the host use besides localhost: one more SAN).
#
# DIR/
#   pki/               the generated PKI: ca.pem, ca-key.pem (the CA's key), broker.pem (key +
#                      certificate + CA; SANs localhost, 127.0.0.1, kafka1..3), and client
#                      certificates the SASL_SSL listeners do not ask for
#   broker/            mounted read-only at /etc/mafka/secrets in every broker: ca.pem, broker.pem,
#                      health.conf (librdkafka settings of the health check, user broker)
#   broker.env         the brokers' env_file: the inter-broker JAAS config (user broker)
#   passwords.env      MAFKA_BROKER_PASSWORD, MAFKA_ADMIN_PASSWORD (the scram-init container's env_file)
#   admin.properties   Java client settings (mafka CLI / Kafka tools: --command-config) for user admin
#   admin.conf         librdkafka settings (kcat -F, confluent-kafka) for user admin
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?usage: docker/secure-setup.sh DIR}
PYTHON=${PYTHON:-.venv/bin/python}
if [ -f "$dir/.complete" ]; then
  exit 0
fi
if ! "$PYTHON" -c 'import cryptography' 2>/dev/null; then
  echo "secure-setup: $PYTHON cannot import cryptography (run make docker-build first, or set PYTHON)" >&2
  exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
chmod 700 "$dir"
umask 077
rm -rf "$dir/pki" "$dir/broker"

hosts=(--host kafka1 --host kafka2 --host kafka3)
if [ -n "${MAFKA_ADVERTISED_HOST:-}" ] && [ "$MAFKA_ADVERTISED_HOST" != localhost ]; then
  hosts+=(--host "$MAFKA_ADVERTISED_HOST")
fi
"$PYTHON" -m tests.harness.certs "$dir/pki" "${hosts[@]}" >/dev/null

password() { "$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(18))'; }
broker_password=$(password)
admin_password=$(password)
scram='org.apache.kafka.common.security.scram.ScramLoginModule required'

mkdir -p "$dir/broker"
cp "$dir/pki/ca.pem" "$dir/pki/broker.pem" "$dir/broker/"
cat > "$dir/broker/health.conf" <<EOF
security.protocol=SASL_SSL
sasl.mechanisms=SCRAM-SHA-512
sasl.username=broker
sasl.password=$broker_password
ssl.ca.location=/etc/mafka/secrets/ca.pem
EOF
cat > "$dir/broker.env" <<EOF
KAFKA_LISTENER_NAME_INTERNAL_SCRAM___SHA___512_SASL_JAAS_CONFIG=$scram username="broker" password="$broker_password";
EOF
cat > "$dir/passwords.env" <<EOF
MAFKA_BROKER_PASSWORD=$broker_password
MAFKA_ADMIN_PASSWORD=$admin_password
EOF
cat > "$dir/admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=$scram username="admin" password="$admin_password";
ssl.truststore.type=PEM
ssl.truststore.location=$dir/pki/ca.pem
EOF
cat > "$dir/admin.conf" <<EOF
security.protocol=SASL_SSL
sasl.mechanisms=SCRAM-SHA-512
sasl.username=admin
sasl.password=$admin_password
ssl.ca.location=$dir/pki/ca.pem
EOF
# The brokers read their files as root in the containers; the host user keeps them to itself.
chmod -R go-rwx "$dir"
touch "$dir/.complete"
echo "secure-setup: certificates and passwords made in $dir"
