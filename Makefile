# Mafka's two set-up commands: `make run` and `make test`.
# Both install what they need (virtualenv at .venv, pip packages, Debian
# packages) and are fast when everything is already in place.

# Python may write its byte-code caches (__pycache__, git-ignored) even where the environment says
# otherwise: with PYTHONDONTWRITEBYTECODE set every process compiles every module it imports from
# source at each start — 1.1 s of the 2.1 s a `mafka --help` took, 0.7 s with the caches — and the
# suite starts hundreds of brokers, CLI runs and client processes on two cores.
unexport PYTHONDONTWRITEBYTECODE

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mafka-installed

.PHONY: run selfcheck docs test lint unit chaos demo bench-wire bench-log bench-replication bench-partitions bench-groups bench-client bench-spark bench-consume bench-scale bench-txn bench-delay bench-slow-node bench-security conformance system-deps clean docker-build docker-up docker-down chaos-docker

run: system-deps $(STAMP)
	$(BIN)/mafka cluster up --brokers 3 --dir .mafka/cluster

selfcheck: $(STAMP)
	$(BIN)/mafka selfcheck

# The documentation site (docs/, mkdocs.yml) into build/site.  --strict with mkdocs.yml's validation
# settings: a broken link or anchor between the pages fails the build (tests/unit/test_docs.py runs it too).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir build/site

# ruff first (a second); then four lanes, each a pytest process: the main integration lane in the
# foreground; beside it, in the background, mypy (half a minute from a cold cache: the same check as
# `make lint`) then the unit tests (CPU-bound, 3-5 minutes: each property test draws 15 % of its
# examples, tests/hypothesis_budget.py; `make unit` draws them all) then the second integration lane
# (SECOND_LANE: fault tests); and the third integration lane (THIRD_LANE: groups, TLS, tiering, Spark
# and the Kafka-tool tests).  The lanes are chosen so that all three end at about the same time
# (measured per module with --durations; most integration time is waiting on brokers, clients and
# timeouts, so three lanes on two cores end sooner than two).  Each integration lane picks its
# loopback ports from its own third of the range below the ephemeral ports (MAFKA_PORT_RANGE), so
# no two pick the same.  The image build for the docker tests also starts in the background (a few
# minutes the first time on a machine).  Output of the background lanes follows once all are done.
# Modules share a cluster where they safely can (tests/integration/README.md).  Each integration lane
# also writes build/<lane>.xml (JUnit, each test's time with its setup): what to rebalance the lanes by.
SECOND_LANE := tests/integration/test_delayed_messages.py \
	tests/integration/test_log_dir_failure.py tests/integration/test_kip101.py tests/integration/test_cluster_stop.py \
	tests/integration/test_acls.py tests/integration/test_secure_failover.py \
	tests/integration/test_cli_admin_scripts.py tests/integration/test_consumer_group_protocol.py \
	tests/integration/test_group_migration.py tests/integration/test_share_fetch.py tests/integration/test_share_state.py \
	tests/integration/test_share_groups_cli.py tests/integration/test_consumer_groups_cli_kip848.py \
	tests/integration/test_share_group_delete.py tests/integration/test_share_metrics.py \
	tests/integration/test_spark_streaming.py tests/integration/test_spark_streaming_sink.py \
	tests/integration/test_spark_streaming_etl.py tests/integration/test_local_transactions.py
THIRD_LANE := tests/integration/test_groups.py tests/integration/test_security_tls.py \
	tests/integration/test_hybrid_storage.py tests/integration/test_spark.py tests/integration/test_spark_standalone.py \
	tests/integration/test_spark_ranges.py tests/integration/test_cli_configs.py tests/integration/test_kafka_scripts.py \
	tests/integration/test_acls_cli.py tests/integration/test_dump_log.py tests/integration/test_kafka_tools.py \
	tests/integration/test_console.py tests/integration/test_client_share_consumer.py \
	tests/integration/test_group_types_delayed_txn.py tests/integration/test_exactly_once.py tests/integration/test_quotas.py \
	tests/integration/test_spark_streaming_faults.py
PYTEST_IT := $(BIN)/pytest -q -rfE -p no:cacheprovider -m 'not chaos and not soak'

test: system-deps $(STAMP)
	$(BIN)/ruff check mafka tests scripts pyspark_mafka.py
	@if docker info >/dev/null 2>&1; then PYTHON=$(BIN)/python bash docker/build.sh --background; fi
	@mkdir -p build; rm -f build/unit-tests.rc build/second-lane.rc build/third-lane.rc build/main-lane.rc build/mypy.rc; \
	low=10000; high=$$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768); \
	third=$$(( (high - low) / 3 )); a=$$(( low + third )); b=$$(( low + 2 * third )); \
	( $(BIN)/mypy > build/mypy.log 2>&1; echo $$? > build/mypy.rc; \
	  MAFKA_HYPOTHESIS_SHARE=0.15 $(BIN)/pytest -q -p no:cacheprovider --durations=10 -m 'not chaos and not soak' tests/unit \
	    > build/unit-tests.log 2>&1; echo $$? > build/unit-tests.rc; \
	  MAFKA_PORT_RANGE=$$a-$$b $(PYTEST_IT) --durations=10 --junitxml=build/second-lane.xml $(SECOND_LANE) \
	    > build/second-lane.log 2>&1; echo $$? > build/second-lane.rc ) & background=$$!; \
	( MAFKA_PORT_RANGE=$$b-$$high $(PYTEST_IT) --durations=10 --junitxml=build/third-lane.xml $(THIRD_LANE) \
	    > build/third-lane.log 2>&1; echo $$? > build/third-lane.rc ) & third_lane=$$!; \
	{ MAFKA_PORT_RANGE=$$low-$$a $(PYTEST_IT) --durations=30 --junitxml=build/main-lane.xml $(addprefix --ignore=,$(SECOND_LANE) $(THIRD_LANE)) tests/integration; \
	  echo $$? > build/main-lane.rc; } 2>&1 | tee build/main-lane.log; \
	integration=$$(cat build/main-lane.rc 2>/dev/null || echo 1); wait $$background; wait $$third_lane; \
	units=$$(cat build/unit-tests.rc 2>/dev/null || echo 1); faults=$$(cat build/second-lane.rc 2>/dev/null || echo 1); \
	thirds=$$(cat build/third-lane.rc 2>/dev/null || echo 1); types=$$(cat build/mypy.rc 2>/dev/null || echo 1); \
	echo "=== mypy (ran in the background first; output in build/mypy.log)"; cat build/mypy.log; \
	echo "=== tests/unit (ran in the background; full output in build/unit-tests.log)"; \
	if [ $$units -eq 0 ]; then tail -n 15 build/unit-tests.log; else cat build/unit-tests.log; fi; \
	echo "=== the second integration lane (ran in the background after the unit tests; full output in build/second-lane.log)"; \
	if [ $$faults -eq 0 ]; then tail -n 15 build/second-lane.log; else cat build/second-lane.log; fi; \
	echo "=== the third integration lane (ran in the background; full output in build/third-lane.log)"; \
	if [ $$thirds -eq 0 ]; then tail -n 15 build/third-lane.log; else cat build/third-lane.log; fi; \
	echo "=== every failure and error of the four lanes (full output in build/*.log)"; \
	grep -hE '^(FAILED|ERROR) |[+]+ Timeout [+]+' build/main-lane.log build/second-lane.log build/third-lane.log build/unit-tests.log || echo "(none)"; \
	echo "=== tests/integration main lane exit $$integration, second lane exit $$faults, third lane exit $$thirds, tests/unit exit $$units, mypy exit $$types"; \
	[ $$integration -eq 0 ] && [ $$faults -eq 0 ] && [ $$thirds -eq 0 ] && [ $$units -eq 0 ] && [ $$types -eq 0 ]

# ruff, then mypy on mafka/ (its configuration, and which packages are strict, is in pyproject.toml;
# its cache is .mypy_cache, so a run after a small change takes seconds).
lint: $(STAMP)
	$(BIN)/ruff check mafka tests scripts pyspark_mafka.py
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# The replication/group chaos run, then the exactly-once run (transactional consume-transform-produce
# under coordinator, leader, controller and member kills and freezes); both run, either failing fails.
chaos: $(STAMP)
	@status=0; $(BIN)/python scripts/chaos_run.py || status=1; \
	$(BIN)/python scripts/chaos_run.py --eos || status=1; \
	$(BIN)/pytest -q -p no:cacheprovider -m 'chaos or soak' tests/integration || status=1; exit $$status

# TLS and SASL beside PLAINTEXT, the authorizer with 1,001 ACLs, SCRAM logins per second (~5 minutes).
bench-security: $(STAMP)
	$(BIN)/python scripts/bench_security.py

bench-wire: $(STAMP)
	$(BIN)/python scripts/bench_wire.py

bench-log: $(STAMP)
	$(BIN)/python scripts/bench_log.py

bench-replication: system-deps $(STAMP)
	$(BIN)/python scripts/bench_replication.py

# Partition scale, 3 brokers RF 3: create, idle cost, Metadata, controlled shutdown, controller failover (PARTITIONS=10000 by default).
bench-partitions: system-deps $(STAMP)
	$(BIN)/python scripts/bench_partitions.py $(if $(PARTITIONS),--partitions $(PARTITIONS))

# PEER=127.0.0.1:29092 measures a running peer broker (../shared/bench/peer-tansu.sh) alongside; then a
# 10-member group through a leave and a join under each group protocol (ROUNDS=3 by default); then a
# share group's records/s on one partition with 1, 4 and 16 members.
bench-groups: system-deps $(STAMP)
	$(BIN)/python scripts/bench_groups.py $(if $(PEER),--peer $(PEER))
	$(BIN)/python scripts/bench_group_change.py $(if $(ROUNDS),--rounds $(ROUNDS))
	$(BIN)/python scripts/bench_share_groups.py $(if $(ROUNDS),--rounds $(ROUNDS))

# mafka.client beside kafka-python, aiokafka and confluent-kafka (RECORDS=1000000 ROUNDS=3 by default).
bench-client: system-deps $(STAMP)
	$(BIN)/python scripts/bench_client.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# The Spark ETL job on a local cluster and a sample dataset (EVENTS=300000 by default).
demo: system-deps $(STAMP)
	$(BIN)/python scripts/demo_spark.py $(if $(EVENTS),--events $(EVENTS)) $(if $(filter 1 yes true,$(STREAMING)),--streaming)

# spark.read.format("mafka") count and groupBy on local[2] (RECORDS=2000000 by default).
bench-spark: system-deps $(STAMP)
	$(BIN)/python scripts/bench_spark.py $(if $(RECORDS),--records $(RECORDS))

# kcat -C beside the Tansu peer at several fetch sizes (RECORDS=1000000 ROUNDS=3 by default).
bench-consume: system-deps $(STAMP)
	$(BIN)/python scripts/bench_consume.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# Transactional producer committing every 100 ms vs the same producer plain, 3 brokers RF 3.
bench-txn: system-deps $(STAMP)
	$(BIN)/python scripts/bench_txn.py $(if $(DURATION),--seconds $(DURATION)) $(if $(ROUNDS),--rounds $(ROUNDS))

bench-delay: system-deps $(STAMP)
	$(BIN)/python scripts/bench_delay.py $(ARGS)

# Tailing produce->consume latency idle, and beside a catch-up reader of a slow cold tier with
# cold-read isolation on and off (ARGS="--rounds 3 --delay-ms 20" by default).
bench-slow-node: system-deps $(STAMP)
	$(BIN)/python scripts/bench_slow_node.py $(ARGS)
	$(BIN)/python scripts/bench_rebalance.py

# 1, 2 and 4 concurrent producers and consumers, 12 partitions on 3 brokers, beside Tansu.
bench-scale: system-deps $(STAMP)
	$(BIN)/python scripts/bench_scale.py $(if $(RECORDS),--records $(RECORDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# librdkafka's own test suite against a local 3-broker cluster (LIBRDKAFKA=path to a checkout, e.g.
# git clone -b v2.15.0 https://github.com/confluentinc/librdkafka; TESTS=0011,0118 runs a subset;
# GROUP_PROTOCOL=consumer runs the consumers with KIP-848, the tests told Kafka 4.0; SHARE=1 runs the KIP-932
# share-consumer tests 0170-0186, told Kafka 4.2, in full mode).
conformance: system-deps $(STAMP)
	@scripts/install-system-deps.sh conformance
	$(BIN)/python scripts/conformance.py --librdkafka $(LIBRDKAFKA) $(if $(TESTS),--tests $(TESTS)) $(if $(GROUP_PROTOCOL),--group-protocol $(GROUP_PROTOCOL)) $(if $(filter 1 yes true,$(SHARE)),--share)

# The compose cluster (docker/README.md): images built locally (no registry), then 3 ZooKeeper
# members and 3 brokers.  docker-down keeps the volumes unless DOWN_FLAGS=-v.
docker-build: $(STAMP)
	@PYTHON=$(BIN)/python bash docker/build.sh

# SECURE=1: every listener SASL_SSL with SCRAM, ACLs on; certificates and passwords made at up time
# in build/docker-secure/<project> (docker/docker-compose.secure.yml, docker/secure-setup.sh).
docker-up: docker-build
	@bash docker/up.sh $(if $(filter 1 yes true,$(SECURE)),--secure)

# The real-network fault table (docker/README.md): kills, pauses, partitions with iptables, a
# rolling restart and the negative control, on a compose project of its own.  ~10 minutes.
chaos-docker: docker-build
	$(BIN)/python scripts/chaos_docker.py

# --remove-orphans: also the secured variant's one-shot scram-init container (so SECURE=1 is not needed here).
docker-down:
	cd docker && docker-compose -p $${COMPOSE_PROJECT_NAME:-mafka} down --remove-orphans $(DOWN_FLAGS)

system-deps:
	@scripts/install-system-deps.sh

$(BIN)/python:
	@scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)

# --no-compile: byte-compiling every installed module (pyspark's thousands) took a minute of a fresh
# clone's set-up; Python compiles what it imports on first use instead.
$(STAMP): $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-compile -e '.[test]'
	@touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache .hypothesis
