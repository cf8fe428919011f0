# Mafka's two set-up commands: `make run` and `make test`.
# Both install what they need (virtualenv at .venv, pip packages, Debian
# packages) and are fast when everything is already in place.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mafka-installed

.PHONY: run selfcheck test lint unit chaos demo bench-wire bench-log bench-replication bench-groups bench-client bench-spark bench-consume bench-scale bench-txn conformance system-deps clean docker-build docker-up docker-down chaos-docker

run: system-deps $(STAMP)
	$(BIN)/mafka cluster up --brokers 3 --dir .mafka/cluster

selfcheck: $(STAMP)
	$(BIN)/mafka selfcheck

# The unit tests (CPU-bound, ~2 minutes) run beside the integration tests (mostly waiting on
# brokers and clients); their output follows once both are done.  The image build for the
# docker tests also starts in the background (a few minutes the first time on a machine).
test: system-deps $(STAMP) lint
	@if docker info >/dev/null 2>&1; then PYTHON=$(BIN)/python bash docker/build.sh --background; fi
	@mkdir -p build; \
	$(BIN)/pytest -q -p no:cacheprovider --durations=10 -m 'not chaos and not soak' tests/unit \
	  > build/unit-tests.log 2>&1 & unit=$$!; \
	$(BIN)/pytest -q -p no:cacheprovider --durations=30 -m 'not chaos and not soak' tests/integration; \
	integration=$$?; wait $$unit; units=$$?; \
	echo "=== tests/unit (ran beside tests/integration; full output in build/unit-tests.log)"; \
	if [ $$units -eq 0 ]; then tail -n 15 build/unit-tests.log; else cat build/unit-tests.log; fi; \
	echo "=== tests/integration exit $$integration, tests/unit exit $$units"; \
	[ $$integration -eq 0 ] && [ $$units -eq 0 ]

lint: $(STAMP)
	$(BIN)/ruff check mafka tests scripts pyspark_mafka.py

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# The replication/group chaos run, then the exactly-once run (transactional consume-transform-produce
# under coordinator, leader, controller and member kills and freezes); both run, either failing fails.
chaos: $(STAMP)
	@status=0; $(BIN)/python scripts/chaos_run.py || status=1; \
	$(BIN)/python scripts/chaos_run.py --eos || status=1; \
	$(BIN)/pytest -q -p no:cacheprovider -m 'chaos or soak' tests/integration || status=1; exit $$status

bench-wire: $(STAMP)
	$(BIN)/python scripts/bench_wire.py

bench-log: $(STAMP)
	$(BIN)/python scripts/bench_log.py

bench-replication: system-deps $(STAMP)
	$(BIN)/python scripts/bench_replication.py

# PEER=127.0.0.1:29092 measures a running peer broker (../shared/bench/peer-tansu.sh) alongside.
bench-groups: system-deps $(STAMP)
	$(BIN)/python scripts/bench_groups.py $(if $(PEER),--peer $(PEER))

# mafka.client beside kafka-python, aiokafka and confluent-kafka (RECORDS=1000000 ROUNDS=3 by default).
bench-client: system-deps $(STAMP)
	$(BIN)/python scripts/bench_client.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# The Spark ETL job on a local cluster and a sample dataset (EVENTS=300000 by default).
demo: system-deps $(STAMP)
	$(BIN)/python scripts/demo_spark.py $(if $(EVENTS),--events $(EVENTS))

# spark.read.format("mafka") count and groupBy on local[2] (RECORDS=2000000 by default).
bench-spark: system-deps $(STAMP)
	$(BIN)/python scripts/bench_spark.py $(if $(RECORDS),--records $(RECORDS))

# kcat -C beside the Tansu peer at several fetch sizes (RECORDS=1000000 ROUNDS=3 by default).
bench-consume: system-deps $(STAMP)
	$(BIN)/python scripts/bench_consume.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# Transactional producer committing every 100 ms vs the same producer plain, 3 brokers RF 3.
bench-txn: system-deps $(STAMP)
	$(BIN)/python scripts/bench_txn.py $(if $(DURATION),--seconds $(DURATION)) $(if $(ROUNDS),--rounds $(ROUNDS))

# 1, 2 and 4 concurrent producers and consumers, 12 partitions on 3 brokers, beside Tansu.
bench-scale: system-deps $(STAMP)
	$(BIN)/python scripts/bench_scale.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# librdkafka's own test suite against a local 3-broker cluster (LIBRDKAFKA=path to a checkout, e.g.
# git clone -b v2.15.0 https://github.com/confluentinc/librdkafka; TESTS=0011,0118 runs a subset).
conformance: system-deps $(STAMP)
	@scripts/install-system-deps.sh conformance
	$(BIN)/python scripts/conformance.py --librdkafka $(LIBRDKAFKA) $(if $(TESTS),--tests $(TESTS))

# The compose cluster (docker/README.md): images built locally (no registry), then 3 ZooKeeper
# members and 3 brokers.  docker-down keeps the volumes unless DOWN_FLAGS=-v.
docker-build: $(STAMP)
	@PYTHON=$(BIN)/python bash docker/build.sh

docker-up: docker-build
	@bash docker/up.sh

# The real-network fault table (docker/README.md): kills, pauses, partitions with iptables, a
# rolling restart and the negative control, on a compose project of its own.  ~10 minutes.
chaos-docker: docker-build
	$(BIN)/python scripts/chaos_docker.py

docker-down:
	cd docker && docker-compose -p $${COMPOSE_PROJECT_NAME:-mafka} down $(DOWN_FLAGS)

system-deps:
	@scripts/install-system-deps.sh

$(BIN)/python:
	@scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
