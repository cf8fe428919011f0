"""Which share-partitions are initializing, initialized and deleting: Kafka's helpers around
``ShareGroupStatePartitionMetadata``, as pure functions."""

from __future__ import annotations

from mafka.group.consumer.member import TopicInfo
from mafka.group.share.state_metadata import (
    StatePartitionMetadata,
    combine_init_maps,
    to_initialize,
)

A, B, C = b"A" * 16, b"B" * 16, b"C" * 16
TOPICS = {"a": TopicInfo(A, "a", 3), "b": TopicInfo(B, "b", 2)}


def test_to_initialize_asks_for_what_is_neither_initialized_nor_freshly_initializing() -> None:
    assert to_initialize(None, {}, ["a", "missing"], TOPICS, 0, 30_000) == {A: ("a", frozenset({0, 1, 2}))}
    meta = StatePartitionMetadata(initializing={A: ("a", frozenset({0}))}, initialized={A: ("a", frozenset({1})), B: ("b", frozenset({0, 1}))})
    # a-0 was asked for at 100: fresh until 30_100
    assert to_initialize(meta, {A: 100}, ["a", "b"], TOPICS, 30_099, 30_000) == {A: ("a", frozenset({2}))}
    assert to_initialize(meta, {A: 100}, ["a", "b"], TOPICS, 30_100, 30_000) == {A: ("a", frozenset({0, 2}))}
    assert to_initialize(meta, {}, [], TOPICS, 0, 30_000) == {}


def test_initialization_moves_partitions_from_initializing_to_initialized() -> None:
    meta = StatePartitionMetadata(deleting={A: "a"}).with_initializing({A: ("a", frozenset({0, 1})), B: ("b", frozenset({0}))})
    assert meta.deleting == {}  # initializing a topic ends its unfinished deletion
    done = meta.with_initialized({A: [0]}, {A: "a"})
    assert done.initializing == {A: ("a", frozenset({1})), B: ("b", frozenset({0}))}
    assert done.initialized_partitions() == {A: frozenset({0})}
    failed = done.without_initializing({B: [0], A: [7]})
    assert failed.initializing == {A: ("a", frozenset({1}))}
    assert done.with_initialized({C: [0]}, {}).initialized[C] == ("<UNKNOWN>", frozenset({0}))


def test_deleting() -> None:
    meta = StatePartitionMetadata(
        initializing={C: ("c", frozenset({0}))}, initialized={A: ("a", frozenset({0, 1})), B: ("b", frozenset({0}))}, deleting={C: "c"}
    )
    assert meta.without_topics([A, C]) == StatePartitionMetadata(initialized={B: ("b", frozenset({0}))})
    offsets = meta.deleting_for_offsets([A, C])  # C is not initialized: not moved
    assert (offsets.initialized, offsets.deleting) == ({B: ("b", frozenset({0}))}, {C: "c", A: "a"})
    assert offsets.without_deleting([A]).deleting == {C: "c"}
    assert meta.delete_candidates({C: ("c", frozenset({0, 1}))}) == {
        A: ("a", frozenset({0, 1})),
        B: ("b", frozenset({0})),
        C: ("c", frozenset({0, 1})),
    }


def test_combine_init_maps_unions_partitions() -> None:
    assert combine_init_maps({A: ("x", frozenset({0}))}, {A: ("a", frozenset({1})), B: ("b", frozenset({2}))}) == {
        A: ("a", frozenset({0, 1})),
        B: ("b", frozenset({2})),
    }
