"""The console's changes: CSRF on every POST, no change on GET, the confirmation step, each action."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .fake_cluster import FakeCluster, Group, build

FORMS: dict[str, dict[str, str]] = {
    "create-topic": {"topic": "fresh", "partitions": "3", "replication_factor": "2", "configs": "retention.ms=1000"},
    "add-partitions": {"topic": "orders", "partitions": "4"},
    "alter-config": {"topic": "orders", "name": "retention.ms", "value": "5000", "op": "set"},
    "reset-offsets": {"group": "idle", "topic": "orders", "strategy": "to-earliest", "value": ""},
    "elect-leaders": {"topic": "orders", "partition": ""},
    "cancel-delayed": {"topic": "orders", "partition": "0", "offset": "7"},
}


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.topic("orders", partitions=2)
    c.records[("orders", 0)] = [(None, b"v", [], 1)] * 10
    c.records[("orders", 1)] = [(None, b"v", [], 1)] * 4
    c.log_start[("orders", 0)] = 2
    c.groups["idle"] = Group("Empty", committed={("orders", 0): 9, ("orders", 1): 1})
    c.groups["busy"] = Group("Stable", [("m", "c", "/h", {"orders": [0, 1]})], {("orders", 0): 5})
    c.delayed[("orders", 0)] = 1
    return c


def csrf_of(client: Any) -> str:
    page = client.get("/actions").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


def confirm_token(page: str) -> str | None:
    found = re.search(r'name="confirm_token" value="([^"]+)"', page)
    return found.group(1) if found else None


def plan(client: Any, kind: str, form: dict[str, str]) -> tuple[int, str]:
    r = client.post(f"/actions/{kind}", data={"csrf_token": csrf_of(client), **form})
    return r.status_code, r.get_data(as_text=True)


@pytest.mark.parametrize("kind", sorted(FORMS))
def test_a_post_without_or_with_a_wrong_csrf_token_is_refused(cluster: FakeCluster, kind: str) -> None:
    client = build(cluster).app.test_client()
    csrf_of(client)  # the session exists and has its token
    assert client.post(f"/actions/{kind}", data=FORMS[kind]).status_code == 403
    assert client.post(f"/actions/{kind}", data={"csrf_token": "forged", **FORMS[kind]}).status_code == 403
    assert client.post("/confirm", data={"confirm_token": "x"}).status_code == 403
    # another browser's token is not this one's
    other = build(cluster).app.test_client()
    assert client.post(f"/actions/{kind}", data={"csrf_token": csrf_of(other), **FORMS[kind]}).status_code == 403
    assert cluster.changes == []


def test_no_get_changes_anything(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    for kind, form in FORMS.items():
        query = "&".join(f"{k}={v}" for k, v in form.items())
        assert client.get(f"/actions/{kind}?{query}").status_code == 405
        assert client.get(f"/actions?{query}").status_code == 200
    assert client.get("/confirm").status_code == 405
    for path in ("/brokers", "/topics", "/topic?name=orders", "/groups", "/group?id=idle", "/transactions",
                 "/rebalancer", "/messages?topic=orders&partition=0", "/api/lag?group=idle"):
        assert client.get(path).status_code == 200, path
    assert cluster.changes == []


@pytest.mark.parametrize("kind", sorted(FORMS))
def test_every_action_changes_nothing_until_confirmed_and_then_exactly_once(cluster: FakeCluster, kind: str) -> None:
    client = build(cluster).app.test_client()
    status, page = plan(client, kind, FORMS[kind])
    assert status == 200, page
    assert cluster.changes == [], "planning changed the cluster"
    token = confirm_token(page)
    assert token is not None, page
    csrf = csrf_of(client)
    done = client.post("/confirm", data={"csrf_token": csrf, "confirm_token": token})
    assert done.status_code == 200
    body = done.get_data(as_text=True)
    assert '<p id="outcome" class="ok">' in body, body
    assert len(cluster.changes) == 1
    # a confirmation is used once
    again = client.post("/confirm", data={"csrf_token": csrf, "confirm_token": token})
    assert again.status_code == 400
    assert "expired or was used already" in again.get_data(as_text=True)
    assert len(cluster.changes) == 1


def test_a_confirmation_token_is_bound_to_the_session_that_planned_it(cluster: FakeCluster) -> None:
    app = build(cluster).app
    planner, other = app.test_client(), app.test_client()
    _, page = plan(planner, "create-topic", FORMS["create-topic"])
    token = confirm_token(page)
    assert token is not None
    r = other.post("/confirm", data={"csrf_token": csrf_of(other), "confirm_token": token})
    assert r.status_code == 400
    assert cluster.changes == []


def test_reset_offsets_dry_run_shows_old_and_new_offsets_and_commits_exactly_those(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    _, page = plan(client, "reset-offsets", {"group": "idle", "topic": "", "strategy": "shift-by", "value": "-3"})
    rows = re.findall(r"<tr><td>idle</td><td>orders</td><td>(\d)</td><td>([^<]+)</td><td>(\d+)</td></tr>", page)
    # orders-0: 9 - 3 = 6; orders-1: 1 - 3 clamped to its log start, 0
    assert rows == [("0", "9", "6"), ("1", "1", "0")], page
    assert "dry run shown: nothing is changed until you confirm" in page
    cluster.records[("orders", 0)].append((None, b"later", [], 2))  # the log moves on; the plan does not
    token = confirm_token(page)
    assert token is not None
    client.post("/confirm", data={"csrf_token": csrf_of(client), "confirm_token": token})
    assert cluster.changes == [("alter_offsets", "idle", [("orders", 0, 6), ("orders", 1, 0)])]


def test_reset_offsets_of_an_active_group_is_shown_but_cannot_be_confirmed(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    status, page = plan(client, "reset-offsets", {"group": "busy", "topic": "orders", "strategy": "to-latest"})
    assert status == 200
    assert "Assignments can only be reset if the group &#39;busy&#39; is inactive, but the current state is Stable." \
        in page
    assert confirm_token(page) is None
    assert "<td>busy</td><td>orders</td><td>0</td><td>5</td><td>12</td>" in page


def test_a_form_that_does_not_parse_comes_back_with_the_error(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    status, page = plan(client, "add-partitions", {"topic": "orders", "partitions": "many"})
    assert status == 400
    assert "partitions must be an integer" in page
    assert 'value="orders"' in page  # the form keeps what was typed
    status, page = plan(client, "add-partitions", {"topic": "orders", "partitions": "2"})
    assert status == 200 and confirm_token(page) is None
    assert "INVALID_PARTITIONS" in page
    assert cluster.changes == []


def test_the_brokers_refusal_shows_as_kafkas_error_name(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    _, page = plan(client, "create-topic", {"topic": "orders"})
    assert "The controller refuses it: TOPIC_ALREADY_EXISTS" in page and confirm_token(page) is None
    _, page = plan(client, "alter-config", {"topic": "orders", "name": "retention.ms", "value": "soon"})
    assert "The brokers refuse it: INVALID_CONFIG" in page and confirm_token(page) is None
    status, page = plan(client, "elect-leaders", {"topic": "missing"})
    assert status == 400 and "UNKNOWN_TOPIC_OR_PARTITION" in page
    assert cluster.changes == []


def test_cancelling_a_delivered_delayed_message_reports_invalid_txn_state(cluster: FakeCluster) -> None:
    cluster.delayed.clear()
    client = build(cluster).app.test_client()
    _, page = plan(client, "cancel-delayed", FORMS["cancel-delayed"])
    token = confirm_token(page)
    assert token is not None
    done = client.post("/confirm", data={"csrf_token": csrf_of(client), "confirm_token": token})
    body = done.get_data(as_text=True)
    assert '<p id="outcome" class="failed">' in body
    assert '<td class="error-name">INVALID_TXN_STATE</td>' in body


def test_the_confirm_page_says_exactly_what_will_happen(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    _, page = plan(client, "create-topic", FORMS["create-topic"])
    assert "Create topic &#39;fresh&#39; with 3 partition(s), replication factor 2." in page
    assert "Topic config retention.ms=1000" in page
    _, page = plan(client, "alter-config", FORMS["alter-config"])
    assert "Set retention.ms of topic &#39;orders&#39;: 604800000 (DEFAULT_CONFIG) → 5000" in page
    _, page = plan(client, "add-partitions", FORMS["add-partitions"])
    assert "Grow topic &#39;orders&#39; from 2 to 4 partitions (new partitions 2 to 3)." in page
    _, page = plan(client, "elect-leaders", FORMS["elect-leaders"])
    assert "<td>orders-0</td><td>1</td><td>1</td><td>ELECTION_NOT_NEEDED</td>" in page
