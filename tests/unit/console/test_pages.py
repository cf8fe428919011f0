"""The console's pages over a fake cluster: what each shows, escaping, a down broker, errors without tracebacks."""

from __future__ import annotations

import re
import time

import pytest

from mafka.client.admin import ConsumerGroupType
from mafka.console.guard import SECURITY_HEADERS

from .fake_cluster import FakeCluster, Group, build

EVIL = "<script>alert(1)</script>"
PAGES = ["/brokers", "/topics", "/topic?name=orders", "/groups", "/group?id=billing", "/transactions",
         "/rebalancer", "/messages", "/messages?topic=orders&partition=0&offset=0", "/actions"]


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.topic("orders", partitions=2)
    c.records[("orders", 0)] = [(b"k0", b'{"n": 0}', [("trace", b"abc")], 1_700_000_000_000),
                                (b"k1", b"plain", [], 1_700_000_001_000)]
    c.groups["billing"] = Group("Stable", [("member-1", "billing-client", "/10.0.0.1", {"orders": [0, 1]})],
                                {("orders", 0): 1})
    return c


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_page_renders_with_the_nav_bar_and_security_headers(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    for path in PAGES:
        r = client.get(path)
        assert r.status_code == 200, (path, r.data[:500])
        body = r.get_data(as_text=True)
        assert body.count('<nav id="nav">') == 1
        for name, value in SECURITY_HEADERS.items():
            assert r.headers[name] == value, (path, name)
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert "unsafe-inline" not in r.headers["Content-Security-Policy"]
        # no inline script or style anywhere: the CSP forbids them
        assert re.search(r"<script(?![^>]*\bsrc=)", body) is None, path
        assert " style=" not in body and "<style" not in body, path
    assert client.get("/").headers["Location"].endswith("/brokers")


def test_brokers_page_names_the_controller_and_disk_use(cluster: FakeCluster) -> None:
    body = build(cluster).app.test_client().get("/brokers").get_data(as_text=True)
    row = re.search(r'<tr class="broker up" data-broker="1">(.*?)</tr>\s*<tr', body, re.S)
    assert row is not None
    assert "controller" in row.group(1) and "h1:9092" in row.group(1)
    assert "/data/broker-1" in row.group(1) and "976.6 KiB" in row.group(1)  # total 1,000,000 bytes
    assert "is down" not in body


def test_a_down_broker_is_shown_down_with_the_reason(cluster: FakeCluster) -> None:
    cluster.down.add(2)
    client = build(cluster).app.test_client()
    started = time.monotonic()
    r = client.get("/brokers")
    assert time.monotonic() - started < 5
    body = r.get_data(as_text=True)
    assert r.status_code == 200
    assert 'class="broker down" data-broker="2"' in body
    assert "Broker 2 (h2:9093) is down: <span class=\"error-name\">_TRANSPORT</span>" in body
    assert 'class="broker up" data-broker="1"' in body and 'class="broker up" data-broker="3"' in body
    # the topics page still renders, with a notice about the sizes it could not learn
    topics = client.get("/topics").get_data(as_text=True)
    assert "broker 2: DescribeLogDirs failed" in topics


def test_a_broker_that_leaves_metadata_stays_listed_as_not_registered(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    client.get("/brokers")
    del cluster.brokers[3]
    body = client.get("/brokers").get_data(as_text=True)
    assert 'class="broker down" data-broker="3"' in body
    assert "is down: <span class=\"error-name\">not registered</span>" in body


def test_topic_page_shows_isr_offsets_configs_and_under_replication(cluster: FakeCluster) -> None:
    leader, replicas, _ = cluster.topics["orders"][1]
    cluster.topics["orders"][1] = (leader, replicas, [leader])
    cluster.configs["orders"] = {"retention.ms": "1000"}
    cluster.delayed[("orders", 0)] = 4
    body = build(cluster).app.test_client().get("/topic?name=orders").get_data(as_text=True)
    p0 = re.search(r'<tr class="partition " data-partition="0">(.*?)</tr>', body, re.S)
    p1 = re.search(r'<tr class="partition urp" data-partition="1">(.*?)</tr>', body, re.S)
    assert p0 is not None and p1 is not None, body
    assert '<td class="isr">1,2,3</td>' in p0.group(1)
    assert '<td class="log-start">0</td>' in p0.group(1) and '<td class="log-end">2</td>' in p0.group(1)
    assert '<td class="delayed">4</td>' in p0.group(1)
    assert '<td class="isr">2</td>' in p1.group(1)
    assert re.search(r'<tr class="config nondefault" data-config="retention.ms">.*?1000.*?DYNAMIC_TOPIC_CONFIG',
                     body, re.S)
    assert '<tr class="config " data-config="cleanup.policy">' in body


def test_delayed_pending_is_a_dash_against_a_broker_without_the_api(cluster: FakeCluster) -> None:
    leader = cluster.topics["orders"][0][0]
    cluster.no_mafka_apis.add(leader)
    body = build(cluster).app.test_client().get("/topic?name=orders").get_data(as_text=True)
    p0 = re.search(r'data-partition="0">(.*?)</tr>', body, re.S)
    assert p0 is not None and '<td class="delayed">—</td>' in p0.group(1)
    assert f"delayed messages not reported by broker(s) {leader} (_TRANSPORT)" in body


def test_unknown_topic_is_a_404_with_kafkas_error_name(cluster: FakeCluster) -> None:
    r = build(cluster).app.test_client().get("/topic?name=nope")
    assert r.status_code == 404
    assert "UNKNOWN_TOPIC_OR_PARTITION" in r.get_data(as_text=True)


def test_an_unexpected_failure_is_an_error_page_without_a_traceback(cluster: FakeCluster) -> None:
    built = build(cluster)
    app, admin = built.app, built.admin

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    admin.list_consumer_groups = broken  # type: ignore[method-assign]
    r = app.test_client().get("/groups")
    body = r.get_data(as_text=True)
    assert r.status_code == 500
    assert "UNKNOWN_SERVER_ERROR" in body
    assert "Traceback" not in body and 'File "' not in body


def test_a_cluster_that_does_not_answer_is_a_503_naming_the_timeout(cluster: FakeCluster) -> None:
    from mafka.client.kafka_error import KafkaError, KafkaException

    built = build(cluster)
    app, admin = built.app, built.admin

    def silent(*args: object, **kwargs: object) -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

    admin.list_topics = silent  # type: ignore[method-assign,assignment]
    for path in ("/brokers", "/topics", "/rebalancer", "/transactions"):
        r = app.test_client().get(path)
        assert r.status_code == 503, path
        assert "_TIMED_OUT" in r.get_data(as_text=True)


def test_group_page_shows_members_assignment_and_lag(cluster: FakeCluster) -> None:
    cluster.records[("orders", 1)] = [(None, b"x", [], 1)] * 5
    body = build(cluster).app.test_client().get("/group?id=billing").get_data(as_text=True)
    p0 = re.search(r'data-tp="orders-0">(.*?)</tr>', body, re.S)
    p1 = re.search(r'data-tp="orders-1">(.*?)</tr>', body, re.S)
    assert p0 is not None and p1 is not None
    assert '<td class="committed">1</td>' in p0.group(1) and '<td class="lag">1</td>' in p0.group(1)
    # assigned but never committed: no lag to compute
    assert '<td class="committed">—</td>' in p1.group(1) and '<td class="lag">—</td>' in p1.group(1)
    assert '<strong id="total-lag">1</strong>' in body
    assert "billing-client" in body and "orders-0, orders-1" in body
    assert 'data-lag-url="/api/lag?group=billing"' in body


def test_lag_json_follows_the_samples(cluster: FakeCluster) -> None:
    built = build(cluster)
    client = built.app.test_client()
    assert client.get("/api/lag?group=billing").get_json() == {"group": "billing", "interval_s": 1.0, "note": None,
                                                                 "points": []}
    assert built.sampler is not None
    built.sampler.sample()
    cluster.records[("orders", 0)].append((None, b"more", [], 2))
    built.sampler.sample()
    data = client.get("/api/lag?group=billing").get_json()
    assert [p["total"] for p in data["points"]] == [1, 2]
    assert data["points"][-1]["partitions"] == {"orders-0": 2}
    assert {p["source"] for p in data["points"]} == {"offsets"}
    r = client.get("/api/lag?group=billing")
    assert r.headers["Content-Type"] == "application/json"


def test_share_groups_section_only_when_listgroups_reports_share(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    assert "Share groups" not in client.get("/groups").get_data(as_text=True)
    cluster.groups["shared-work"] = Group("Stable", type=ConsumerGroupType.CONSUMER)
    share_type = type("ShareType", (), {"name": "SHARE"})()
    cluster.groups["shared-work"].type = share_type
    body = client.get("/groups").get_data(as_text=True)
    assert '<h2 id="share-groups">Share groups</h2>' in body
    share_section = body.split('id="share-groups"')[1]
    assert "shared-work" in share_section
    assert "shared-work" not in body.split('id="share-groups"')[0]


def test_transactions_page_marks_hanging_ones(cluster: FakeCluster) -> None:
    now = int(time.time() * 1000)
    cluster.transactions = [("fresh", 1, 10, "Ongoing", now - 1_000), ("stuck", 2, 11, "Ongoing", now - 3_600_000),
                            ("finished", 3, 12, "CompleteCommit", -1)]
    body = build(cluster, hanging_after_ms=60_000).app.test_client().get("/transactions").get_data(as_text=True)
    assert re.search(r'<tr class="txn hanging" data-txn="stuck">', body)
    assert re.search(r'<tr class="txn " data-txn="fresh">', body)
    assert re.search(r'<tr class="txn " data-txn="finished">', body)
    assert "1 hanging, 2 open, 3 transactional ids" in text(body)


def test_rebalancer_page_lists_reassignments_and_disks(cluster: FakeCluster) -> None:
    body = text(build(cluster).app.test_client().get("/rebalancer").get_data(as_text=True))
    assert "moving-0 1,2,3 3 1" in body
    assert "60.0 %" in body  # 400,000 usable of 1,000,000


@pytest.mark.parametrize("where", ["topic", "key", "value", "header", "group", "client"])
def test_attacker_controlled_strings_render_as_text(cluster: FakeCluster, where: str) -> None:
    topic = EVIL if where == "topic" else "orders"
    if where == "topic":
        cluster.topic(EVIL, partitions=1)
    headers: list[tuple[str, bytes | None]] = [(EVIL, EVIL.encode())] if where == "header" else []
    record = (EVIL.encode() if where == "key" else b"k", EVIL.encode() if where == "value" else b"v",
              headers, 1_700_000_000_000)
    cluster.records[(topic, 0)] = [record]
    group = EVIL if where == "group" else "billing"
    client_id = EVIL if where == "client" else "billing-client"
    cluster.groups[group] = Group("Stable", [("m-1", client_id, "/h", {topic: [0]})], {(topic, 0): 0})
    client = build(cluster).app.test_client()
    from urllib.parse import quote

    pages = ["/topics", f"/topic?name={quote(topic)}", "/groups", f"/group?id={quote(group)}",
             f"/messages?topic={quote(topic)}&partition=0&offset=0",
             f"/messages?topic={quote(topic)}&partition=0&offset=0&format=json",
             f"/actions?topic={quote(topic)}&group={quote(group)}"]
    seen = 0
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200, (path, r.data[:300])
        body = r.get_data(as_text=True)
        assert EVIL not in body, path
        safe_forms = ("&lt;script&gt;alert(1)&lt;/script&gt;", "%3Cscript%3Ealert(1)%3C/script%3E")
        rest = body
        for form in safe_forms:
            rest = rest.replace(form, "")
        assert "alert(1)" not in rest, path
        seen += body.count("&lt;script&gt;alert(1)&lt;/script&gt;")
    assert seen > 0, "the hostile string was shown (escaped) somewhere"


def test_non_default_configs_come_first(cluster: FakeCluster) -> None:
    cluster.configs["orders"] = {"segment.ms": "1000"}
    body = build(cluster).app.test_client().get("/topic?name=orders").get_data(as_text=True)
    names = re.findall(r'data-config="([^"]+)"', body)
    assert names == ["segment.ms", "cleanup.policy", "retention.ms"]


def test_a_loopback_console_refuses_other_host_names(cluster: FakeCluster) -> None:
    client = build(cluster, trusted_hosts=["127.0.0.1", "localhost"]).app.test_client()
    assert client.get("/brokers", headers={"Host": "127.0.0.1:9021"}).status_code == 200
    # a DNS name rebound to 127.0.0.1 does not reach the console's pages (or its CSRF tokens)
    assert client.get("/brokers", headers={"Host": "rebound.example:9021"}).status_code == 400


def test_rebalancer_page_shows_the_plan_and_its_progress_from_zookeeper(cluster: FakeCluster) -> None:
    import json

    from kazoo.exceptions import NoNodeError

    from mafka.console.rebalancer_plan import PlanReader
    from mafka.rebalancer.execution import Execution
    from mafka.rebalancer.plan import Move

    moves = [Move("orders", 0, 1, 3, 1000, (3, 2), "full"), Move("orders", 1, 2, 3, 2000, (3, 1), "full"),
             Move(EVIL, 0, 1, 2, 10, (2,), "full")]
    ex = Execution.start("manual-1", moves, 1_700_000_000_000, max_concurrent=2, pipelined=True, origin="manual",
                         decisions=["broker 1 is 91 % full"])
    ex.moves[0].state, ex.moves[0].started_ms, ex.moves[0].finished_ms = "done", 1_700_000_000_000, 1_700_000_004_000
    ex.moves[1].state = "running"
    state: dict[str, bytes | None] = {"data": json.dumps(ex.to_json()).encode()}

    class FakeZk:
        def start(self, timeout: float) -> None:
            pass

        def get(self, path: str) -> tuple[bytes, object]:
            assert path == "/mafka/rebalancer/state"
            if state["data"] is None:
                raise NoNodeError(path)
            return state["data"], None

        def stop(self) -> None:
            pass

        def close(self) -> None:
            pass

    page = build(cluster, plans=PlanReader("zk:2181", client_factory=lambda connect: FakeZk())).app.test_client()
    body = page.get("/rebalancer").get_data(as_text=True)
    assert "manual-1" in body and "1 of 3 moves finished" in text(body)
    assert "4.0 s" in body and "broker 1 is 91 % full" in body
    assert EVIL not in body and "&lt;script&gt;" in body  # a topic name is data, escaped
    state["data"] = None
    assert "No plan has run." in page.get("/rebalancer").get_data(as_text=True)
    # without --zookeeper the page says where the plan would come from
    assert "--zookeeper" in build(cluster).app.test_client().get("/rebalancer").get_data(as_text=True)
