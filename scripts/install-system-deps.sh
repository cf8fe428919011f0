#!/usr/bin/env bash
# Installs the Debian packages Mafka's commands need, only those missing
# (`install-system-deps.sh conformance` adds what librdkafka's test suite needs to build).
# Uses sudo when not root.  Safe to run repeatedly; a no-op when all is there.
set -euo pipefail

# Debian package → a command or file that shows it is installed.
declare -A NEEDS=(
  [python3-venv]="python3 -c 'import ensurepip'"
  # ZooKeeper 3.8 (brokers' coordination; run by mafka.coordination.zookeeper):
  # the jars land in /usr/share/java (libzookeeper-java), with slf4j for logging.
  [zookeeper]="test -f /usr/share/java/zookeeper.jar -a -f /usr/share/java/slf4j-simple.jar"
  # ZooKeeper's Java runtime (zookeeper pulls in default-jre; this covers a missing java).
  [default-jre-headless]="command -v java"
  # A third-party Kafka client for integration tests.
  [kcat]="command -v kcat"
  # The web console's browser tests: headless Chromium driven through chromedriver (selenium).
  [chromium]="command -v chromium"
  [chromium-driver]="command -v chromedriver"
)

# `make conformance` builds librdkafka's test suite: a C/C++ toolchain and the
# libraries its configure looks for (rapidjson lets the statistics test run).
if [ "${1:-}" = conformance ]; then
  NEEDS+=(
    [build-essential]="command -v g++ && command -v make"
    [libssl-dev]="test -f /usr/include/openssl/ssl.h"
    [zlib1g-dev]="test -f /usr/include/zlib.h"
    [libzstd-dev]="test -f /usr/include/zstd.h"
    [rapidjson-dev]="test -f /usr/include/rapidjson/schema.h"
  )
fi

missing=()
for pkg in "${!NEEDS[@]}"; do
  if ! bash -c "${NEEDS[$pkg]}" >/dev/null 2>&1; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing system packages: ${missing[*]} (no apt-get here; install them by hand)" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
