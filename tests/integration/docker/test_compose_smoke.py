"""The compose cluster's smoke test (in ``make test``): build, up, every broker serves, a crash loses nothing, down.

``docker/docker-compose.yml`` under a project name of its own and free host
ports; images from ``docker/build.sh`` (built when missing: a few minutes
once per machine, then seconds):

1. all six containers become healthy (a broker: registered and serving Metadata);
2. confluent-kafka on the host produces (acks=all, idempotent) through each
   broker alone and reads everything back through each broker alone (the
   EXTERNAL listener, ``localhost:<port>``); kcat inside the network reads it
   through the INTERNAL listener (``kafka1:19092``);
3. a partition leader's broker process is SIGKILLed inside its container:
   the container exits, compose's ``restart: unless-stopped`` brings it back,
   and meanwhile every acknowledged record is read through the survivors, which
   also take new acks=all writes (min.insync.replicas=2 of 3);
4. the restarted broker rejoins (healthy, every ISR full again) and serves all
   records itself;
5. ``docker-compose down -v`` removes the project's containers, network and volumes.

Skipped, with the reason, on a machine where no Docker engine answers.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import free_ports
from tests.harness.docker.compose import (
    BROKERS,
    REPO,
    ComposeCluster,
    build_images,
    client,
    docker_available,
)
from tests.harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.skipif(docker_available() is not None,
                                                          reason=f"Docker: {docker_available()}")]

TOPIC = "smoke"
PARTITIONS = 3


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    build_images()
    cluster = ComposeCluster(log_dir=tmp_path_factory.mktemp("compose-logs"))
    try:
        started = time.monotonic()
        cluster.up()
        print(f"compose cluster healthy in {time.monotonic() - started:.1f} s")
        yield cluster
    finally:
        cluster.down()


def produce(bootstrap: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000})
    failed: list[str] = []
    for i, v in enumerate(values):
        p.produce(TOPIC, v.encode(), partition=i % PARTITIONS,
                  on_delivery=lambda err, msg: failed.append(str(err)) if err else None)
    assert p.flush(90) == 0
    assert not failed, failed[:3]


def consume_all(bootstrap: str, expected: int, timeout: float = 60.0) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke-reader", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
        return out
    finally:
        c.close()


def isrs_full(bootstrap: str) -> bool:
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    except KafkaException:  # a metadata request timed out while a broker restarts: ask again
        return False
    return all(len(p.isrs) == 3 for p in md.topics[TOPIC].partitions.values())


def _page(url: str) -> str | None:
    try:
        return urllib.request.urlopen(url, timeout=30).read().decode()
    except OSError:
        return None


def test_every_broker_serves_and_a_crashed_one_loses_nothing_and_rejoins(compose: ComposeCluster) -> None:
    admin = AdminClient({"bootstrap.servers": compose.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)

    written: list[str] = []
    for broker_id in (1, 2, 3):
        values = [f"via-{broker_id}-{n}" for n in range(40)]
        produce(compose.broker_bootstrap(broker_id), values)
        written += values
    for broker_id in (1, 2, 3):
        got = consume_all(compose.broker_bootstrap(broker_id), len(written))
        assert sorted(got) == sorted(written), f"through broker {broker_id}: {len(got)} of {len(written)}"

    # Inside the network, through the INTERNAL listener.
    r = compose.exec("kafka2", "kcat", "-b", "kafka1:19092", "-C", "-t", TOPIC, "-e", "-o", "beginning", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted(written)

    # Each broker's metrics (kafka_exporter-style partition offsets from the leaders) and the console,
    # published on host ports docker picked.
    offsets = 0.0
    for broker in BROKERS:
        address = compose.compose("port", broker, "9404").stdout.strip().replace("0.0.0.0", "127.0.0.1")
        text = urllib.request.urlopen(f"http://{address}/metrics", timeout=30).read().decode()
        offsets += sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("kafka_topic_partition_current_offset{") and f'topic="{TOPIC}"' in line)
    assert offsets == len(written)
    address = compose.compose("port", "console", "9021").stdout.strip().replace("0.0.0.0", "127.0.0.1")
    page = wait_until(lambda: _page(f"http://{address}/topics"), 60, "the console lists the topic")
    assert TOPIC in page

    # Crash the leader of partition 0: its process dies, its container exits and is restarted.
    md = admin.list_topics(TOPIC, timeout=10)
    victim = md.topics[TOPIC].partitions[0].leader
    service = BROKERS[victim - 1]
    restarts = compose.restart_count(service)
    r = compose.exec(service, "pkill", "-9", "-f", "server-start")
    # 137: the broker's death ended the container (tini exits with its child) and the kernel
    # SIGKILLed the rest of its PID namespace, the exec'd pkill among them, before pkill exited.
    # Either way the broker is dead; the restart count below proves it.
    assert r.returncode in (0, 137), (r.returncode, r.stderr)
    survivors = ",".join(compose.broker_bootstrap(b) for b in (1, 2, 3) if b != victim)
    got = consume_all(survivors, len(written), timeout=90)
    assert sorted(got) == sorted(written), f"after broker {victim} crashed: {len(got)} of {len(written)}"
    more = [f"after-crash-{n}" for n in range(30)]
    produce(survivors, more)
    written += more

    wait_until(lambda: compose.restart_count(service) > restarts, 60, f"{service} restarted by its policy")
    took = compose.wait_healthy((service,), timeout=120)
    wait_until(lambda: isrs_full(compose.bootstrap), 120, "every ISR full again", interval=1.0)
    print(f"broker {victim} back and healthy {took:.1f} s after its restart was seen")
    got = consume_all(compose.broker_bootstrap(victim), len(written), timeout=90)
    assert sorted(got) == sorted(written), f"through the restarted broker {victim}: {len(got)} of {len(written)}"


def test_docker_up_names_a_port_that_is_taken() -> None:
    """``make docker-up`` checks the host ports before docker-compose creates anything."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        first, third = free_ports(2)  # the defaults (9092, 9094) may be a local `make run`'s
        r = subprocess.run(["make", "-s", "docker-up", f"MAFKA_PORT_1={first}", f"MAFKA_PORT_2={port}",
                            f"MAFKA_PORT_3={third}", "COMPOSE_PROJECT_NAME=mafkaportcheck"],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert f"port {port} (MAFKA_PORT_2) is already in use" in r.stdout + r.stderr, r.stdout + r.stderr
    leftovers = client(30).containers.list(all=True, filters={"name": "mafkaportcheck"})
    assert leftovers == [], "nothing may be created when a port is taken"
