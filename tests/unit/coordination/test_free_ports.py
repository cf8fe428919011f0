"""free_loopback_ports: distinct free ports, inside MAFKA_PORT_RANGE when it is set."""

from __future__ import annotations

import socket

import pytest

from mafka.coordination.zookeeper import free_loopback_ports


def test_ports_are_distinct_bindable_and_below_the_ephemeral_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAFKA_PORT_RANGE", raising=False)
    ports = free_loopback_ports(5)
    assert len(set(ports)) == 5
    assert all(10000 <= p for p in ports)
    for p in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_the_range_variable_confines_the_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAFKA_PORT_RANGE", "23000-23100")
    for _ in range(20):
        assert all(23000 <= p < 23100 for p in free_loopback_ports(3))
    base = free_loopback_ports(4, consecutive=True)
    assert base == list(range(base[0], base[0] + 4)) and 23000 <= base[0] and base[-1] < 23100


def test_a_malformed_range_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAFKA_PORT_RANGE", "lots")
    with pytest.raises(ValueError, match="MAFKA_PORT_RANGE"):
        free_loopback_ports(1)
