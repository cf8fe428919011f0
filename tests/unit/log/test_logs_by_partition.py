"""LogsByPartition: the registry's logs dict, indexed by topic through every way of changing it."""

from __future__ import annotations

import pytest

from mafka.log.manager.registry import LogsByPartition


def _logs(*tps: tuple[str, int]) -> LogsByPartition:
    logs = LogsByPartition()
    for tp in tps:
        logs[tp] = f"log-{tp[0]}-{tp[1]}"  # type: ignore[assignment]
    return logs


def test_of_topic_lists_only_that_topics_logs_in_partition_order() -> None:
    logs = _logs(("a", 2), ("b", 0), ("a", 0), ("ab", 1))
    assert logs.of_topic("a") == [(("a", 0), "log-a-0"), (("a", 2), "log-a-2")]
    assert logs.of_topic("ab") == [(("ab", 1), "log-ab-1")]
    assert logs.of_topic("missing") == []


def test_every_removal_keeps_the_index() -> None:
    logs = _logs(("a", 0), ("a", 1), ("b", 0), ("c", 0))
    del logs[("a", 0)]
    assert logs.pop(("b", 0)) == "log-b-0"
    assert logs.pop(("b", 0), None) is None
    with pytest.raises(KeyError):
        logs.pop(("b", 0))
    assert logs.of_topic("a") == [(("a", 1), "log-a-1")]
    assert logs.of_topic("b") == []
    logs.clear()
    assert logs.of_topic("a") == [] and logs.of_topic("c") == [] and not logs


def test_replacing_a_log_and_bulk_updates_are_indexed() -> None:
    logs = _logs(("a", 0))
    logs[("a", 0)] = "future"  # type: ignore[assignment]
    logs.update({("a", 1): "x"})  # type: ignore[dict-item]
    assert logs.setdefault(("a", 1), "y") == "x"  # type: ignore[arg-type]
    assert logs.setdefault(("d", 0), "z") == "z"  # type: ignore[arg-type]
    assert logs.of_topic("a") == [(("a", 0), "future"), (("a", 1), "x")]
    assert logs.of_topic("d") == [(("d", 0), "z")]
    assert dict(logs) == {("a", 0): "future", ("a", 1): "x", ("d", 0): "z"}
    with pytest.raises(NotImplementedError):
        logs.popitem()
