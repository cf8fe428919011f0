#!/usr/bin/env bash
# Installs the Debian packages Mafka's commands need, only those missing.
# Uses sudo when not root.  Safe to run repeatedly; a no-op when all is there.
set -euo pipefail

# Debian package → a command or file that shows it is installed.
declare -A NEEDS=(
  [python3-venv]="python3 -c 'import ensurepip'"
)

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
