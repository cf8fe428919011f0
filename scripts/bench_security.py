"""What security costs: throughput over PLAINTEXT, SSL and SASL_SSL, the authorizer with 1,000 ACLs, SCRAM logins per second.

Two single-broker clusters run side by side on loopback:

* ``open``: listeners PLAINTEXT, SSL (server certificate only), SASL_SSL
  (SCRAM-SHA-512) and SASL_PLAINTEXT (SCRAM-SHA-512), no authorizer;
* ``acl``: the same SASL_PLAINTEXT listener with Kafka's AclAuthorizer and
  1,000 ACLs (990 literal topic ACLs of other users, 10 prefixed), the
  benchmark user allowed by one prefixed ACL — so every produce and fetch
  request is checked against a realistic cache, not short-circuited as a
  super user's would be.

Each round produces N × 100-byte records with confluent-kafka (librdkafka, so
the client is not the bottleneck; acks=1, one partition per run, a fresh
topic) and consumes them back, once per case; rounds interleave the cases
and the medians are reported with ratios to PLAINTEXT (and ``acl`` to the
same listener without an authorizer).  Then SCRAM-SHA-512 logins: sequential
connect + SaslHandshake + SaslAuthenticate exchanges per second (client
PBKDF2 included, 4096 iterations), and the same from 4 processes at once.
Usage::

    python scripts/bench_security.py [--records 1000000] [--rounds 3] [--logins 200] [--chart security.png]

``make bench-security`` runs it with the defaults.  ``--chart PATH.png`` also draws the
medians table (bars per listener, each annotated ÷ PLAINTEXT).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402

from tests.harness.certs import generate_pki  # noqa: E402
from tests.harness.cluster import LocalCluster  # noqa: E402

USER, PASSWORD = "bench", "bench-secret"
PREFIX = "bench-"


def worker(spec: str) -> None:
    """Child process: produce then consume; prints {"produce": s, "consume": s}."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    args = json.loads(spec)
    conf, topic, n = args["conf"], args["topic"], args["records"]
    value = b"x" * 100
    producer = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.num.messages": 10000,
                         "queue.buffering.max.messages": 1000000})
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(120)
    produce_s = time.perf_counter() - start
    assert left == 0, f"{left} records not delivered"
    # fetch.queue.backoff.ms=10: librdkafka's default (1 s) pauses a partition whenever the Python loop falls
    # behind a fast broker, which measures librdkafka's backoff instead of the broker (see the README's
    # "Several clients" note)
    consumer = Consumer({**conf, "group.id": f"bench-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "fetch.queue.backoff.ms": 10})
    consumer.assign([TopicPartition(topic, 0, 0)])
    start = time.perf_counter()
    got = 0
    while got < n:
        batch = consumer.consume(10000, 5.0)
        got += sum(1 for m in batch if m.error() is None)
    consume_s = time.perf_counter() - start
    consumer.close()
    print(json.dumps({"produce": produce_s, "consume": consume_s}))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_case(conf: dict, topic: str, records: int, broker_pid: int) -> dict:
    """One produce + consume run in a child process; adds the broker's CPU seconds over the run."""
    spec = json.dumps({"conf": conf, "topic": topic, "records": records})
    before = cpu_seconds(broker_pid)
    out = subprocess.run([sys.executable, __file__, "--worker", spec], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["broker_cpu"] = cpu_seconds(broker_pid) - before
    return result


def create_user(cluster: LocalCluster) -> None:
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap, "--alter",
         "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]", "--entity-type", "users",
         "--entity-name", USER],
        check=True, capture_output=True, timeout=60,
    )


def add_acls(cluster: LocalCluster) -> int:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    bindings = [
        AclBinding(ResourceType.TOPIC, f"other-topic-{i}", ResourcePatternType.LITERAL, f"User:u{i % 50}", "*",
                   AclOperation.READ if i % 2 else AclOperation.WRITE, AclPermissionType.ALLOW)
        for i in range(990)
    ]
    bindings += [
        AclBinding(ResourceType.TOPIC, f"team-{i}-", ResourcePatternType.PREFIXED, f"User:u{i}", "*",
                   AclOperation.ALL, AclPermissionType.ALLOW)
        for i in range(9)
    ]
    bindings.append(AclBinding(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, f"User:{USER}", "*",
                               AclOperation.ALL, AclPermissionType.ALLOW))
    bindings.append(AclBinding(ResourceType.GROUP, "bench-", ResourcePatternType.PREFIXED, f"User:{USER}", "*",
                               AclOperation.ALL, AclPermissionType.ALLOW))
    for i in range(0, len(bindings), 200):
        for future in admin.create_acls(bindings[i:i + 200]).values():
            future.result(60)
    return len(bindings)


def login(address: tuple[str, int]) -> None:
    from tests.harness.raw_connection import Raw

    raw = Raw(address)
    try:
        response = raw.authenticate("SCRAM-SHA-512", USER, PASSWORD)
        assert response.error_code == 0, response
    finally:
        raw.close()


def logins_per_second(address: tuple[str, int], count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        login(address)
    return count / (time.perf_counter() - start)


def _login_many(args: tuple[tuple[str, int], int]) -> None:
    address, count = args
    for _ in range(count):
        login(address)


def parallel_logins_per_second(address: tuple[str, int], count: int, processes: int = 4) -> float:
    with multiprocessing.Pool(processes) as pool:
        start = time.perf_counter()
        pool.map(_login_many, [(address, count // processes)] * processes)
        return (count // processes * processes) / (time.perf_counter() - start)


def chart(path: Path, title: str, medians: dict[str, tuple[float, float, float]]) -> Path:
    """The medians as bars per case, each ÷ PLAINTEXT: case → (produce rec/s, consume rec/s, broker CPU-s/M)."""
    cases = list(medians)

    def panel(title: str, i: int) -> Panel:
        return Panel(title, cases, {title: [medians[c][i] for c in cases]}, baseline=(title, "PLAINTEXT"))

    return draw(path, title, [panel("produce records/s", 0), panel("consume records/s", 1),
                              panel("broker CPU-seconds per million records", 2)],
                note="each bar ÷ PLAINTEXT above it")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--logins", type=int, default=200)
    parser.add_argument("--worker")
    add_chart_argument(parser)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0

    work = Path(tempfile.mkdtemp(prefix="bench-security-"))
    pki = generate_pki(work / "pki")
    common = {
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.broker),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "offsets.topic.replication.factor": "1",
    }
    open_cluster = LocalCluster(work / "open", brokers=1, settings=common,
                                listeners=("SSL", "SASL_SSL", "SASL_PLAINTEXT"))
    acl_cluster = LocalCluster(work / "acl", brokers=1, listeners=("SASL_PLAINTEXT",), settings={
        **common, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
    })
    open_cluster.start()
    acl_cluster.start()
    try:
        create_user(open_cluster)
        create_user(acl_cluster)
        acl_count = add_acls(acl_cluster)
        scram = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD}
        tls = {"ssl.ca.location": str(pki.ca)}
        cases = {
            "PLAINTEXT": {"bootstrap.servers": open_cluster.bootstrap},
            "SSL": {"bootstrap.servers": open_cluster.bootstrap_for("SSL"), "security.protocol": "SSL", **tls},
            "SASL_SSL": {"bootstrap.servers": open_cluster.bootstrap_for("SASL_SSL"),
                         "security.protocol": "SASL_SSL", **tls, **scram},
            "SASL_PLAINTEXT": {"bootstrap.servers": open_cluster.bootstrap_for("SASL_PLAINTEXT"),
                               "security.protocol": "SASL_PLAINTEXT", **scram},
            f"SASL_PLAINTEXT+{acl_count} ACLs": {"bootstrap.servers": acl_cluster.bootstrap_for("SASL_PLAINTEXT"),
                                                 "security.protocol": "SASL_PLAINTEXT", **scram},
        }
        pids = {name: (acl_cluster if "ACLs" in name else open_cluster).info["brokers"][0]["pid"] for name in cases}
        results: dict[str, list[dict]] = {name: [] for name in cases}
        names = list(cases)
        for round_no in range(1, args.rounds + 1):
            # each round starts with another case, so no case always runs first (or right after another)
            shift = (round_no - 1) % len(names)
            for name in names[shift:] + names[:shift]:
                topic = f"{PREFIX}{uuid.uuid4().hex[:8]}"
                r = run_case(cases[name], topic, args.records, pids[name])
                results[name].append(r)
                print(f"round {round_no} {name:>28}: produce {args.records / r['produce']:>9,.0f} rec/s, "
                      f"consume {args.records / r['consume']:>9,.0f} rec/s, "
                      f"broker {r['broker_cpu'] / args.records * 1e6:.2f} CPU-s/M", flush=True)
        print()
        title = f"medians of {args.rounds} rounds, {args.records:,} x 100-byte records, acks=1, 1 partition"
        print(title)
        print(f"{'case':>30} {'produce rec/s':>14} {'ratio':>6} {'consume rec/s':>14} {'ratio':>6} "
              f"{'broker CPU-s/M':>15} {'ratio':>6}")
        medians = {n: (statistics.median(args.records / r["produce"] for r in rs),
                       statistics.median(args.records / r["consume"] for r in rs),
                       statistics.median(r["broker_cpu"] / args.records * 1e6 for r in rs))
                   for n, rs in results.items()}
        base = medians["PLAINTEXT"]
        for name, (p, c, cpu) in medians.items():
            print(f"{name:>30} {p:>14,.0f} {p / base[0]:>6.2f} {c:>14,.0f} {c / base[1]:>6.2f} "
                  f"{cpu:>15.2f} {cpu / base[2]:>6.2f}")
        sasl = medians["SASL_PLAINTEXT"]
        acl = medians[f"SASL_PLAINTEXT+{acl_count} ACLs"]
        if args.chart:
            print(f"chart: {chart(args.chart, title, medians)}", file=sys.stderr)
        print(f"authorizer cost (SASL_PLAINTEXT with {acl_count} ACLs vs without): throughput produce "
              f"{(acl[0] / sasl[0] - 1) * 100:+.1f}%, consume {(acl[1] / sasl[1] - 1) * 100:+.1f}%; broker CPU per "
              f"record {(acl[2] / sasl[2] - 1) * 100:+.1f}% (goal: throughput within 5%)")
        b = open_cluster.info["brokers"][0]
        address = (b["host"], b["listeners"]["SASL_PLAINTEXT"])
        login(address)
        seq = logins_per_second(address, args.logins)
        par = parallel_logins_per_second(address, args.logins)
        print(f"SCRAM-SHA-512 logins (4096 iterations, connect + handshake + 2 round trips): "
              f"{seq:,.0f}/s sequential, {par:,.0f}/s from 4 processes")
    finally:
        open_cluster.stop()
        acl_cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
