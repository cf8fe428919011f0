#!/usr/bin/env bash
# Mafka (one broker, one partition) beside the Tansu peer, interleaved, in one sitting.
#
#   scripts/bench_broker.sh [ROUNDS]        (default 3 rounds; ~3 minutes per round)
#
# Each round runs shared/bench/suite.sh sections "kcat" (kcat -P of N x 100 B with acks=1 and
# acks=all, linger 5 ms; kcat -C of the same) and "e2e" (end-to-end latency at E2E_RATE msgs/s)
# against a fresh Tansu (memory storage) and a fresh single-broker Mafka (ZooKeeper + broker 1),
# alternating which goes first.  kcat uses the librdkafka of the confluent-kafka wheel for both
# (KCAT_LD=wheel; Debian's kcat 2.0.2 cannot talk to Tansu).  Results: JSONL under $WORK and the
# markdown tables of summarize.py on stdout.  Nothing is written under shared/.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="${BENCH:-$HERE/../shared/bench}"
ROUNDS="${1:-3}"
WORK="${WORK:-$(mktemp -d /tmp/mafka-bench-XXXXXX)}"
export PYTHON="$HERE/.venv/bin/python"
export N="${N:-1000000}" REPS=1 E2E_RATE="${E2E_RATE:-2000}" E2E_SECS="${E2E_SECS:-10}" KCAT_LD=wheel
export DATA_DIR="$WORK/data" VENV="$WORK/venv-bench"
MAFKA_PORT="${MAFKA_PORT:-39092}"
ZK_PORT="${ZK_PORT:-32181}"
TANSU_PORT="${TANSU_PORT:-29092}"
echo "bench work dir: $WORK" >&2

run_tansu() {
  local tpid
  tpid=$(PORT=$TANSU_PORT LOG="$WORK/tansu-$1.log" "$BENCH/peer-tansu.sh")
  BOOTSTRAP=127.0.0.1:$TANSU_PORT LABEL=tansu PIDS=$tpid OUT="$WORK/tansu.jsonl" TAG="t$1" "$BENCH/suite.sh" kcat e2e || true
  kill "$tpid"; wait "$tpid" 2>/dev/null || true
}

run_mafka() {
  local dir="$WORK/mafka-$1"
  "$HERE/.venv/bin/mafka" cluster up --brokers 1 --dir "$dir" --base-port $MAFKA_PORT --zookeeper-port $ZK_PORT > "$WORK/mafka-$1.log" 2>&1 &
  local cpid=$!
  for _ in $(seq 1 300); do [[ -s "$dir/cluster.json" ]] && break; sleep 0.2; done
  local bpid
  bpid=$("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['brokers'][0]['pid'])" "$dir/cluster.json")
  BOOTSTRAP=127.0.0.1:$MAFKA_PORT LABEL=mafka PIDS=$bpid OUT="$WORK/mafka.jsonl" TAG="m$1" "$BENCH/suite.sh" kcat e2e || true
  kill -TERM "$cpid"; wait "$cpid" 2>/dev/null || true
}

for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then run_tansu "$r"; run_mafka "$r"; else run_mafka "$r"; run_tansu "$r"; fi
done
"$PYTHON" "$BENCH/summarize.py" "$WORK/tansu.jsonl" "$WORK/mafka.jsonl"
