"""Login mode (SASL): a login page first, a backend per user with their credentials, logout closes it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mafka.client.security import SaslAuthenticationFailed
from mafka.console.actions import Actions
from mafka.console.browse import Browser
from mafka.console.cluster import ClusterReader
from mafka.console.service import Backend, Console
from mafka.console.web import create_app

from .fake_cluster import FakeAdmin, FakeCluster, FakeConsumer, FakeWire

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}


class Logins:
    """``login_with``: a backend over the fake cluster for a known user; what a wrong
    password gets from the brokers (SASL_AUTHENTICATION_FAILED) otherwise."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.opened: list[tuple[str, FakeAdmin]] = []

    def __call__(self, username: str, password: str) -> Backend:
        admin = FakeAdmin(self.cluster)
        wire = FakeWire(self.cluster)
        if PASSWORDS.get(username) != password:
            # what the kernel raises when the broker refuses the SASL credentials
            refusal = SaslAuthenticationFailed("Authentication failed: Invalid username or password", "h1:9092")
            wire.send_each = lambda calls, timeout: [refusal for _ in calls]  # type: ignore[method-assign]
        self.opened.append((username, admin))
        reader = ClusterReader(admin, wire, timeout=1.0)  # type: ignore[arg-type]
        browser = Browser(admin, lambda extra: FakeConsumer(self.cluster, extra), 1.0)  # type: ignore[arg-type]
        return Backend(reader, Actions(reader), browser, username)


@pytest.fixture
def logins() -> Logins:
    cluster = FakeCluster()
    cluster.topic("orders")
    return Logins(cluster)


def csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def log_in(client: Any, username: str, password: str, next_path: str = "") -> Any:
    page = client.get("/login").get_data(as_text=True)
    return client.post(f"/login?next={next_path}", data={"csrf_token": csrf(page), "username": username,
                                                         "password": password})


def test_pages_ask_for_a_login_first(logins: Logins) -> None:
    client = create_app(Console(login_with=logins)).test_client()
    r = client.get("/topics")
    assert r.status_code == 302 and "/login?next=/topics" in r.headers["Location"]
    assert client.get("/api/lag?group=g").status_code == 401
    assert logins.opened == []


def test_a_wrong_password_is_refused_with_kafkas_error_name(logins: Logins) -> None:
    client = create_app(Console(login_with=logins)).test_client()
    r = log_in(client, "alice", "guess")
    assert r.status_code == 401
    assert "SASL_AUTHENTICATION_FAILED" in r.get_data(as_text=True)
    assert logins.opened[-1][1].closed
    assert client.get("/brokers").status_code == 302


def test_each_user_gets_their_own_clients_and_logout_closes_them(logins: Logins) -> None:
    app = create_app(Console(login_with=logins))
    alice, bob = app.test_client(), app.test_client()
    r = log_in(alice, "alice", "alice-secret", "/topics")
    assert r.status_code == 302 and r.headers["Location"] == "/topics"
    log_in(bob, "bob", "bob-secret")
    page = alice.get("/topics").get_data(as_text=True)
    assert '<span class="user">alice</span>' in page and "orders" in page
    assert '<span class="user">bob</span>' in bob.get("/brokers").get_data(as_text=True)
    assert [u for u, _ in logins.opened] == ["alice", "bob"]
    alice_admin = logins.opened[0][1]
    alice.post("/logout", data={"csrf_token": csrf(page)})
    assert alice_admin.closed and not logins.opened[1][1].closed
    assert alice.get("/topics").status_code == 302
    assert bob.get("/topics").status_code == 200


def test_login_never_redirects_off_the_console(logins: Logins) -> None:
    client = create_app(Console(login_with=logins)).test_client()
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example/"):
        r = log_in(client, "alice", "alice-secret", target)
        assert r.status_code == 302 and r.headers["Location"] == "/brokers", target


def test_the_password_is_not_in_the_cookie(logins: Logins) -> None:
    client = create_app(Console(login_with=logins)).test_client()
    r = log_in(client, "alice", "alice-secret")
    cookies = " ".join(r.headers.getlist("Set-Cookie"))
    assert "alice-secret" not in cookies
    import base64

    payload = cookies.split("mafka_console=")[1].split(".")[0]
    assert payload  # not compressed: nothing of it is hidden from this check
    decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    assert b"alice" not in decoded
