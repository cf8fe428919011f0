#!/usr/bin/env bash
# Builds Mafka's images with no registry (`make docker-build`):
#
#   mafka-base:bookworm   Debian bookworm minbase from debootstrap + `docker import`: Python 3.11,
#                         a Java runtime and Debian's zookeeper, plus the tools the chaos tests use
#                         inside containers (iproute2, iptables, procps, kcat).  Built once per
#                         package list (the tag carries its hash) and kept by the Docker engine.
#   mafka:latest          mafka-base + a virtualenv with the mafka wheel and its dependencies, built
#                         on the host (`pip wheel`), installed with --no-index: no network inside.
#                         Rebuilt only when the sources change (tag mafka:src-<hash of the tree>).
#
# Usage: docker/build.sh [--background]
# Env: DEBIAN_MIRROR (default: the host's first Debian URI, else deb.debian.org), PYTHON (the
# host interpreter that builds the wheels; default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."

# --background: start the build and return at once (make test does this, so the first build on a
# fresh machine overlaps the tests that need no image); its output goes to build/docker-build.log.
mkdir -p build
if [ "${1:-}" = --background ]; then
  nohup bash "$0" > build/docker-build.log 2>&1 &
  echo "docker-build: started in the background (build/docker-build.log)"
  exit 0
fi
# One build at a time: a second caller waits here, then finds the images made.
exec 9>build/docker-build.lock
flock 9

PACKAGES="python3,python3-venv,default-jre-headless,zookeeper,iproute2,iptables,procps,kcat,netcat-openbsd,ca-certificates"
BASE_TAG="mafka-base:bookworm-$(printf %s "$PACKAGES" | sha1sum | cut -c1-10)"
PYTHON=${PYTHON:-.venv/bin/python}

need() { command -v "$1" >/dev/null 2>&1; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

if ! need docker || ! docker info >/dev/null 2>&1; then
  echo "docker-build: no Docker engine answers (docker info failed)" >&2
  exit 1
fi

mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1)
  [ -n "$uri" ] || uri=$(grep -hsE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1)
  echo "${uri:-http://deb.debian.org/debian}"
}

if docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  echo "docker-build: $BASE_TAG is there"
else
  if ! need debootstrap; then
    echo "docker-build: installing debootstrap"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq debootstrap
  fi
  root=$(mktemp -d /var/tmp/mafka-rootfs.XXXXXX)
  trap '$SUDO rm -rf "$root"' EXIT
  echo "docker-build: debootstrap bookworm from $(mirror) into $root (a few minutes, once)"
  $SUDO debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" "$(mirror)" > "$root.log" 2>&1 \
    || { tail -30 "$root.log" >&2; echo "docker-build: debootstrap failed (full log: $root.log)" >&2; exit 1; }
  $SUDO chroot "$root" apt-get clean
  $SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/tmp/* "$root.log"
  $SUDO tar -C "$root" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$BASE_TAG" >/dev/null
  echo "docker-build: imported $BASE_TAG"
fi
docker tag "$BASE_TAG" mafka-base:bookworm

# The mafka image, keyed by the contents of what goes into the wheel (committed or not).
SRC_HASH=$(find mafka setup.cfg pyproject.toml pyspark_mafka.py README.md docker/Dockerfile -type f \
             -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -c1-12)
SRC_TAG="mafka:src-$SRC_HASH"
if docker image inspect "$SRC_TAG" >/dev/null 2>&1; then
  echo "docker-build: $SRC_TAG is there"
else
  ctx=build/docker
  rm -rf "$ctx"; mkdir -p "$ctx/wheels"
  echo "docker-build: building wheels"
  "$PYTHON" -m pip wheel -q --wheel-dir "$ctx/wheels" . >/dev/null
  cp docker/Dockerfile "$ctx/"
  docker build -q -t "$SRC_TAG" --build-arg BASE="$BASE_TAG" "$ctx" >/dev/null
  echo "docker-build: built $SRC_TAG"
fi
docker tag "$SRC_TAG" mafka:latest
# Older source builds only take space (one in use by a container stays: rmi refuses it).
docker images --format '{{.Repository}}:{{.Tag}}' mafka | grep '^mafka:src-' | grep -vx "$SRC_TAG" \
  | xargs -r docker rmi >/dev/null 2>&1 || true
echo "docker-build: mafka:latest = $SRC_TAG on $BASE_TAG"
