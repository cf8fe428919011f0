#!/usr/bin/env python3
"""librdkafka's own test suite against a local Mafka cluster (``make conformance``).

Given a librdkafka source checkout (the developer fetches it; none of its code
lives here), this script

1. builds ``tests/test-runner`` there if it is missing (``./configure``,
   ``make libs``, ``make -C tests build``);
2. reads the test table in ``tests/test.c`` and sorts every test into: run,
   or skipped with a reason — mock-cluster/local tests (they never talk to a
   broker), SASL/SSL/ACL/OAUTH tests (the security issue), manual tests,
   tests librdkafka itself flags as known issues, and tests needing a broker
   newer than Kafka 2.8;
3. starts a 3-broker Mafka cluster as librdkafka's trivup cluster is set up
   (``num.partitions=4``, replication factor 3, ``broker.rack=RACK<id>`` with
   the rack-aware replica selector, auto-create on; a second cluster with
   auto-create off for the ``noautocreate`` scenario), writes ``test.conf``,
   and puts Mafka's ``kafka-*.sh`` wrappers on ``KAFKA_PATH`` so the tests
   that shell out to ``kafka-topics.sh --zookeeper …`` work;
4. runs the tests one number at a time (``TESTS=0011``) with a timeout,
   restarting the cluster if a broker died, and prints a table — test,
   result, seconds, first failure line — plus a markdown copy.

``--group-protocol consumer`` runs the suite as librdkafka's CI runs it against
Kafka 4 for KIP-848 (``packaging/tools/run-integration-tests.sh … consumer``), but
in full mode unless ``--quick`` (that CI job runs ``make quick``, which skips most
group sub-tests): ``TEST_CONSUMER_GROUP_PROTOCOL=consumer`` makes every consumer the tests create
use ``group.protocol=consumer`` (and drops the classic-only settings
``session.timeout.ms``, ``heartbeat.interval.ms``, ``partition.assignment.strategy``
the tests set), and the broker version given to the tests is 4.0.0, the first
Kafka with the protocol GA: librdkafka gates no KIP-848 path on the version (the
client finds ConsumerGroupHeartbeat in ApiVersions), but its tests take Kafka 4's
branches with it (``--bootstrap-server`` for ``kafka-topics.sh``, group configs and
Kafka 4's authorized operations in 0081, MsgVersion 1 gone in 0092).  trivup
gives a Kafka 4 cluster no ``group.consumer.*`` setting, so the brokers run with
Kafka 4's defaults for them, written out in :data:`CONSUMER_PROTOCOL_SETTINGS`.

``--share`` runs librdkafka's KIP-932 share-consumer tests (by default every test
named ``*share*``; 0170–0186 talk to the cluster, the ``_mock``/``_local`` ones are
skipped as always) as its share-consumer CI job runs them
(``packaging/tools/run-share-consumer-tests.sh``): the broker version given to the
tests is 4.2.0 (their ``TEST_BRKVER(4, 2, 0, 0)``), full mode unless ``--quick``
(in quick mode their sub-tests are skipped), and the brokers run with the setting
that job gives its Kafka cluster, ``group.share.min.record.lock.duration.ms=1000``
(0173 and 0176 set a group's ``share.record.lock.duration.ms`` to 3000 through
IncrementalAlterConfigs), on top of :data:`CONSUMER_PROTOCOL_SETTINGS` with the
share protocol enabled (:data:`SHARE_SETTINGS`).

Usage::

    python scripts/conformance.py --librdkafka ~/src/librdkafka            # everything
    python scripts/conformance.py --librdkafka ~/src/librdkafka --tests 0011,0118
    python scripts/conformance.py --librdkafka ~/src/librdkafka --group-protocol consumer
    python scripts/conformance.py --librdkafka ~/src/librdkafka --share --tests 0170,0171
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harness.cluster import LocalCluster  # noqa: E402

#: Tests that need authentication or encryption: left to the security issue.
SECURITY = re.compile(r"ssl|sasl|oauth|_auth|reauth|scram|kerberos|gssapi", re.IGNORECASE)

#: Failures that come from the suite's assumptions about its environment, not
#: from Kafka behaviour Mafka lacks: test name → why (shown as ENV in the table).
ENVIRONMENT: dict[str, str] = {
    "0098_consumer_txn": "compiles and runs a Java transactional producer against Kafka's jars in "
                         "$KAFKA_PATH/libs (an Apache Kafka installation; Mafka ships no Java client)",
}

#: Failures that need a Kafka feature another open issue builds: test name → (which, a pattern
#: the first failure line matches when that is the cause).  Shown as PENDING; they still count
#: as failures for the exit status.  A failure of the same test for another cause stays FAILED.
PENDING: dict[str, tuple[str, str]] = {
    "0081_admin": ("its ACL subtests (CreateAcls/DescribeAcls/DeleteAcls): librdkafka's trivup cluster runs "
                   "an ACL authorizer; authorization is the security work", r"Acls"),
    "0109_auto_create_topics": ("its unauthorized-topic subtest runs kafka-acls.sh: authorization is the "
                                "security work", r"kafka-acls"),
}

#: The broker settings of ``--group-protocol consumer``: Kafka 4's defaults, which trivup's
#: Kafka 4 cluster runs with (it sets none of them), spelled out so that the run does not
#: depend on Mafka's defaults staying Kafka's.
CONSUMER_PROTOCOL_SETTINGS = {
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.assignors": "uniform,range",
}

#: The broker settings of ``--share``: librdkafka's share-consumer CI cluster (Kafka 4.2+, whose
#: share groups are on by default) with the lock-duration floor that job lowers to 1000 ms.
SHARE_SETTINGS = {
    **CONSUMER_PROTOCOL_SETTINGS,
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "group.share.min.record.lock.duration.ms": "1000",
}

#: The broker version the tests are told (``TEST_KAFKA_VERSION``), per group protocol.
BROKER_VERSION = {"classic": "2.8.0", "consumer": "4.0.0"}

#: The broker version ``--share`` tells the tests: the share-consumer tests need 4.2.
SHARE_BROKER_VERSION = "4.2.0"

ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\(B")


@dataclass
class Test:
    """One ``_TEST(...)`` entry of librdkafka's ``tests/test.c``."""

    name: str
    flags: str
    min_version: tuple[int, ...] = (0,)
    scenario: str = "default"
    skip: str | None = None
    result: str = "NOT RUN"
    seconds: float = 0.0
    detail: str = ""
    extra: list[str] = field(default_factory=list)

    @property
    def number(self) -> str:
        return self.name[:4]


def parse_tests(test_c: Path, broker_version: tuple[int, ...] = (2, 8, 0, 0)) -> list[Test]:
    """The entries of ``struct test tests[]``, with the skip reason this runner gives each.

    A test whose minimum broker version is above *broker_version* (what the runner is told)
    is skipped, as librdkafka's own runner skips it.
    """
    text = test_c.read_text()
    table = text[text.index("struct test tests[] = {"):]
    table = table[: table.index("{NULL}")]
    tests = []
    for start in [m.end() for m in re.finditer(r"\b_TEST\(", table)]:
        depth, i = 1, start
        while depth:
            depth += {"(": 1, ")": -1}.get(table[i], 0)
            i += 1
        name, _, rest = table[start:i - 1].partition(",")
        name = name.strip()
        t = Test(name, rest)
        versions = re.findall(r"TEST_BRKVER\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)", rest)
        if versions:
            t.min_version = tuple(int(x) for x in versions[0])
        sc = re.search(r'\.scenario\s*=\s*"([^"]+)"', rest)
        if sc:
            t.scenario = sc.group(1)
        tests.append(t)
    for t in tests:
        flags = t.flags
        if "TEST_F_LOCAL" in flags or t.name.endswith(("_mock", "_local")) or "_mock_" in t.name:
            t.skip = "local/mock-cluster test: never talks to a broker"
        elif "TEST_F_MANUAL" in flags:
            t.skip = "manual test (librdkafka runs it only by hand)"
        elif SECURITY.search(t.name):
            t.skip = "SASL/SSL/ACL/OAUTH: left to the security issue"
        elif re.search(r"TEST_F_KNOWN_ISSUE\b(?!_)", flags):
            t.skip = "librdkafka flags it TEST_F_KNOWN_ISSUE (its runner skips it too)"
        elif t.min_version > broker_version:
            t.skip = (f"needs a broker newer than Kafka {'.'.join(map(str, broker_version[:3]))} ("
                      + ".".join(map(str, t.min_version[:3])) + ")")
    return tests


def build(checkout: Path, force: bool) -> Path:
    """``tests/test-runner`` of *checkout*, built if missing (or *force*)."""
    runner = checkout / "tests" / "test-runner"
    if runner.exists() and not force:
        return runner
    jobs = str(os.cpu_count() or 2)
    steps = [
        (["./configure", "--disable-gssapi", "--disable-curl"], checkout),
        (["make", "-j", jobs, "libs"], checkout),
        (["make", "-j", jobs, "build"], checkout / "tests"),
    ]
    for argv, cwd in steps:
        print(f"building: {' '.join(argv)} (in {cwd})", flush=True)
        r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit(f"build step failed: {' '.join(argv)}\n{r.stdout[-4000:]}")
    return runner


def start_cluster(work: Path, auto_create: bool, extra: dict[str, str] | None = None) -> LocalCluster:
    settings = {
        "num.partitions": "4",
        "default.replication.factor": "3",
        "offsets.topic.replication.factor": "3",
        "auto.create.topics.enable": "true" if auto_create else "false",
        "delete.topic.enable": "true",
        "broker.rack": "RACK${broker.id}",
        "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
        # trivup leaves Kafka's default (3 s); the suite's group tests are timed with it.
        "group.initial.rebalance.delay.ms": "3000",
        **(extra or {}),
    }
    name = "cluster" if auto_create else "cluster-noautocreate"
    directory = work / name
    if directory.exists():
        subprocess.run(["rm", "-rf", str(directory)], check=True)
    return LocalCluster(directory, brokers=3, settings=settings).start(timeout=120)


def cluster_alive(cluster: LocalCluster) -> list[int]:
    """Ids of brokers whose process has gone."""
    dead = []
    for b in cluster.info["brokers"]:
        try:
            os.kill(b["pid"], 0)
        except ProcessLookupError:
            dead.append(b["id"])
    return dead


SUMMARY = re.compile(r"^\|\s*(\d{4}_\w+)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING|NOT STARTED)\s*\|\s*([\d.]+)s\s*\|?(.*)$")


def run_number(runner: Path, number: str, scenario: str, cluster: LocalCluster, work: Path,
               timeout: float, multiplier: float, quick: bool,
               group_protocol: str = "classic",
               subtests: str | None = None,
               broker_version: str | None = None) -> tuple[dict[str, tuple[str, float, str]], str]:
    """Runs every test of one number; returns name → (result, seconds, detail) and the log path.

    *group_protocol* ``consumer`` sets ``TEST_CONSUMER_GROUP_PROTOCOL`` (librdkafka's tests then
    create every consumer with ``group.protocol=consumer``) and tells them Kafka 4.0.
    *broker_version* overrides the version the tests are told (``--share``: 4.2.0).
    *subtests* is librdkafka's ``SUBTESTS``: only the sub-tests whose name contains it run.
    """
    conf = work / f"test-{scenario}.conf"
    conf.write_text(
        f"metadata.broker.list={cluster.bootstrap}\n"
        f"test.timeout.multiplier={multiplier}\n"
        f"test.topic.prefix=rdkafkatest\n"
    )
    venv = Path(sys.executable).resolve().parent.parent
    env = dict(os.environ,
               TESTS=number, TEST_KAFKA_VERSION=broker_version or BROKER_VERSION[group_protocol], TEST_SCENARIO=scenario,
               RDKAFKA_TEST_CONF=str(conf), KAFKA_PATH=str(Path(sys.prefix)),
               ZK_ADDRESS=f"127.0.0.1:{cluster.zookeeper_port}", BROKERS=cluster.bootstrap,
               PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
               LD_LIBRARY_PATH=f"{runner.parent.parent / 'src'}:{runner.parent.parent / 'src-cpp'}")
    env.pop("TEST_CONSUMER_GROUP_PROTOCOL", None)
    env.pop("SUBTESTS", None)
    if subtests:
        env["SUBTESTS"] = subtests
    if group_protocol != "classic":
        env["TEST_CONSUMER_GROUP_PROTOCOL"] = group_protocol
    log = work / "logs" / f"{number}-{scenario}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(runner), "-L"] + (["-Q"] if quick else [])
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=runner.parent, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"*": ("TIMEOUT", timeout, f"killed after {timeout:.0f}s")}, str(log)
    return parse_log(log.read_text(errors="replace"), proc.returncode), str(log)


FAILED_AT = re.compile(r'^### Test "(\w+)(?: \(([^"]*)\))?" failed at (.*?): ###$')
PASSED_LINE = re.compile(r"^\[(\w+)\s*/\s*([\d.]+)s\] =+ Test (\w+) PASSED =+$")


def parse_log(text: str, returncode: int) -> dict[str, tuple[str, float, str]]:
    """name → (result, seconds, detail) from a test-runner log.

    The summary table at the end gives every test's state; a runner that died
    first (librdkafka aborts on a test timeout, and at exit when a failed test
    left its client threads behind) still printed ``### Test "X" failed at …: ###``
    and the reason on the next line, and ``=== Test X PASSED ===`` for the tests
    of the same number that ran beside it and passed.
    """
    results: dict[str, tuple[str, float, str]] = {}
    lines = [ANSI.sub("", raw).strip() for raw in text.splitlines()]
    for line in lines:
        passed = PASSED_LINE.match(line)
        if passed and passed.group(1) == passed.group(3):
            results[passed.group(3)] = ("PASSED", float(passed.group(2)), "")
    for i, line in enumerate(lines):
        failed = FAILED_AT.match(line)
        if failed and failed.group(1) not in results:
            reason = next((x for x in lines[i + 1:i + 4] if x), "")
            where = failed.group(3) if failed.group(2) is None else f"{failed.group(2)}, {failed.group(3)}"
            results[failed.group(1)] = ("FAILED", 0.0, f"{reason} ({where})")
    for line in lines:
        m = SUMMARY.match(line)
        if m:
            detail = m.group(4).strip().rstrip("|").strip() or results.get(m.group(1), ("", 0, ""))[2]
            results[m.group(1)] = (m.group(2), float(m.group(3)), detail)
    if not results:
        tail = next((x for x in reversed(lines) if x), "no output")
        results["*"] = ("CRASHED", 0.0, f"exit {returncode}: {tail}")
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--librdkafka", type=Path, default=os.environ.get("LIBRDKAFKA_PATH"),
                    help="a librdkafka source checkout (e.g. git clone -b v2.15.0 …)")
    ap.add_argument("--tests", help="comma-separated test numbers or names (default: all)")
    ap.add_argument("--work", type=Path,
                    help="logs, clusters and the table (default: .mafka/conformance, "
                         ".mafka/conformance-consumer with --group-protocol consumer, "
                         ".mafka/conformance-share with --share)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per test number")
    ap.add_argument("--multiplier", type=float, default=2.0, help="librdkafka's test.timeout.multiplier")
    ap.add_argument("--quick", action="store_true", help="librdkafka's quick mode (-Q)")
    ap.add_argument("--group-protocol", choices=sorted(BROKER_VERSION), default="classic",
                    help="the consumers' group.protocol (TEST_CONSUMER_GROUP_PROTOCOL); consumer: KIP-848, "
                         "the tests told Kafka 4.0.0")
    ap.add_argument("--share", action="store_true",
                    help="KIP-932's share-consumer tests (default: every *share* test): the tests told "
                         f"Kafka {SHARE_BROKER_VERSION}, the brokers run with SHARE_SETTINGS")
    ap.add_argument("--subtests", help="librdkafka's SUBTESTS: run only the sub-tests whose name contains this")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--markdown", type=Path, help="also write the table here (default: WORK/results.md)")
    args = ap.parse_args()
    if not args.librdkafka:
        ap.error("--librdkafka (or LIBRDKAFKA_PATH) must name a librdkafka checkout")
    if args.work is None:
        suffix = "" if args.group_protocol == "classic" else f"-{args.group_protocol}"
        suffix = "-share" + suffix if args.share else suffix
        args.work = ROOT / ".mafka" / f"conformance{suffix}"
    checkout = args.librdkafka.resolve()
    runner = build(checkout, args.rebuild)
    version = SHARE_BROKER_VERSION if args.share else BROKER_VERSION[args.group_protocol]
    tests = parse_tests(checkout / "tests" / "test.c", tuple(int(x) for x in (version + ".0").split(".")[:4]))
    extra_settings = CONSUMER_PROTOCOL_SETTINGS if args.group_protocol == "consumer" else {}
    if args.share:
        extra_settings = SHARE_SETTINGS
    if args.tests:
        wanted = [w.strip() for w in args.tests.split(",") if w.strip()]
        tests = [t for t in tests if any(t.name == w or t.number == w for w in wanted)]
    elif args.share:
        tests = [t for t in tests if "share" in t.name]
    args.work.mkdir(parents=True, exist_ok=True)
    by_number: dict[tuple[str, str], list[Test]] = {}
    for t in tests:
        if t.skip is None:
            scenario = "noautocreate" if "noautocreate" in t.scenario else "default"
            by_number.setdefault((scenario, t.number), []).append(t)
        else:
            t.result = "SKIPPED"
    clusters: dict[str, LocalCluster] = {}
    try:
        for (scenario, number), group in sorted(by_number.items()):
            for other in [name for name in clusters if name != scenario]:
                clusters.pop(other).stop()  # one cluster at a time on this small machine
            cluster = clusters.get(scenario)
            if cluster is None or cluster_alive(cluster):
                if cluster is not None:
                    dead = cluster_alive(cluster)
                    for t in group:
                        t.extra.append(f"cluster restarted before it: broker(s) {dead} had died")
                    cluster.stop()
                cluster = clusters[scenario] = start_cluster(args.work, scenario == "default", extra_settings)
            started = time.monotonic()
            results, log = run_number(runner, number, scenario, cluster, args.work, args.timeout,
                                      args.multiplier, args.quick, args.group_protocol, args.subtests,
                                      version)
            elapsed = time.monotonic() - started
            for t in group:
                result, seconds, detail = results.get(t.name, results.get("*", ("NOT RUN", elapsed, "")))
                t.result, t.seconds, t.detail = result, seconds, detail
                if result in ("FAILED", "CRASHED", "TIMEOUT") and t.name in ENVIRONMENT:
                    t.result = "ENV"
                    t.detail = f"{ENVIRONMENT[t.name]} ({detail})"
                elif (result in ("FAILED", "CRASHED", "TIMEOUT") and t.name in PENDING
                      and re.search(PENDING[t.name][1], detail)):
                    t.result = "PENDING"
                    t.detail = f"{PENDING[t.name][0]} ({detail})"
                print(f"{t.name:<50} {t.result:<8} {t.seconds:8.1f}s  {t.detail[:120]}  [{log}]", flush=True)
    finally:
        for c in clusters.values():
            c.stop()
    rows = [(t.name, t.result, t.seconds, t.skip or t.detail) for t in tests]
    width = max(len(r[0]) for r in rows) if rows else 10
    print()
    print(f"{'test':<{width}}  {'result':<8} {'seconds':>8}  first failure line / reason")
    for name, result, seconds, detail in rows:
        print(f"{name:<{width}}  {result:<8} {seconds:8.1f}  {detail[:160]}")
    counts: dict[str, int] = {}
    for _, result, _, _ in rows:
        counts[result] = counts.get(result, 0) + 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    md = args.markdown or args.work / "results.md"
    with open(md, "w") as f:
        f.write("| test | result | seconds | first failure line / reason |\n|---|---|---|---|\n")
        for name, result, seconds, detail in rows:
            f.write(f"| {name} | {result} | {seconds:.1f} | {detail.replace('|', '/')[:200]} |\n")
    (args.work / "results.json").write_text(json.dumps(
        [{"test": n, "result": r, "seconds": s, "detail": d} for n, r, s, d in rows], indent=1))
    print(f"table: {md}")
    return 0 if all(r in ("PASSED", "SKIPPED", "ENV") for _, r, _, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
