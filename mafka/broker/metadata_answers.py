"""Metadata topic entries kept encoded between requests, re-encoded only where the cluster changed.

Clients ask for every topic's metadata periodically; with 100,000
partitions, building and encoding that answer from scratch costs seconds of
reactor time.  What is kept here, per (listener, :class:`~mafka.broker.metadata_encoding.TopicLayout`):

* each topic's encoded entry (a *fragment*), stamped with the topic's
  :meth:`~mafka.broker.metadata_cache.MetadataCache.topic_stamp` and reused
  while that is unchanged, so after a change only the topics that changed
  are encoded again;
* the joined entries of every topic, stamped with the metadata cache's
  :attr:`~mafka.broker.metadata_cache.MetadataCache.generation`: an
  all-topics answer in a generation already answered costs no encoding at
  all.

Keys, and why: the listener, because a leader without an endpoint there is
answered LEADER_NOT_AVAILABLE; the layout, because encodings differ by
version (versions with one layout share entries); the stamps and the
generation, because they change with everything an entry shows.  Nothing
else: brokers, cluster id and controller id are written per request (a few
bytes), and so are authorized operations (per principal) and every error
entry.

Authorization — why entries, not whole answers: Metadata leaves out the
topics a principal may not Describe.  The handler decides per request, with
the authorizer, which topics it answers, and asks here only for those; the
all-topics array is used only when the handler found nothing to leave out.
So no cached byte string can carry a topic to a principal the handler did
not clear it for, whoever asked first, and principals, ACLs and ACL changes
stay out of every key.  The price is one authorizer check per topic per
request, which Kafka pays too.

Off the reactor: work on more than :data:`INLINE_PARTITIONS` partitions —
an all-topics array of a big cluster in a new generation, a request naming
thousands of partitions — runs in a worker thread (``run_blocking``) on a
:class:`~mafka.broker.metadata_cache.MetadataSnapshot`, which never
changes; the reactor only takes the snapshot and copies the kept entries (a
few dict copies) and swaps in what the thread kept.  Requests for the
all-topics array of a generation being built wait for that build rather
than start their own.
Without ``run_blocking`` (unit-test brokers) everything runs inline.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Any

from twisted.internet import defer

from mafka.topics import INTERNAL_TOPICS

from .metadata_cache import MetadataCache, MetadataSnapshot
from .metadata_encoding import TopicLayout, encode_topic

__all__ = ["MetadataAnswers", "INLINE_PARTITIONS", "assemble", "then"]

#: Partitions up to which entries are assembled on the reactor (some ten milliseconds' work at worst).
INLINE_PARTITIONS = 10_000

_Key = tuple[str, TopicLayout]


class _Kept:
    """The entries kept for one (listener, layout): each topic's stamp and entry.

    Two flat dicts rather than a dict of tuples: ints and bytes are not
    tracked by the garbage collector, so 100,000 entries add nothing to
    its passes.
    """

    __slots__ = ("stamps", "entries", "version")

    def __init__(self, stamps: dict[str, int] | None = None, entries: dict[str, bytes] | None = None) -> None:
        self.stamps: dict[str, int] = {} if stamps is None else stamps
        self.entries: dict[str, bytes] = {} if entries is None else entries
        #: bumped by every change, so that a replacement built from a copy knows whether it is still whole
        self.version = 0

    def copy(self) -> _Kept:
        return _Kept(dict(self.stamps), dict(self.entries))

    def merge(self, other: _Kept) -> None:
        """Takes *other*'s entries, except where this one's are newer."""
        stamps, entries, get = self.stamps, self.entries, self.stamps.get
        for name, stamp in other.stamps.items():
            if get(name, -2) <= stamp:
                stamps[name] = stamp
                entries[name] = other.entries[name]
        self.version += 1

    def prune(self, topics: Container[str]) -> None:
        """Forgets the entries of topics not among *topics* (deleted ones)."""
        gone = [name for name in self.stamps if name not in topics]
        for name in gone:
            del self.stamps[name], self.entries[name]
        if gone:
            self.version += 1


def assemble(
    snapshot: MetadataSnapshot, listener: str, layout: TopicLayout, kept: _Kept, names: Sequence[str] | None,
    into: _Kept,
) -> list[bytes]:
    """The entries of the topics *names* (None: every topic, sorted) as of *snapshot*.

    Reuses the entries of *kept* whose stamp is the topic's in the snapshot,
    encodes the others, and writes into *into* the entries encoded (*into*
    may be *kept* itself, or a new one that then holds every entry
    answered).  Touches nothing else: safe in a worker thread given *kept*
    and *into* that nobody else uses meanwhile.
    """
    if names is None:
        names = snapshot.topics()
    alive = snapshot.alive_ids(listener)
    stamps, ids, partitions = snapshot.stamps, snapshot.topic_ids, snapshot.partitions
    kept_stamps, kept_entries = kept.stamps, kept.entries
    into_stamps, into_entries = into.stamps, into.entries
    zero = bytes(16)
    memo: dict[tuple[int, ...], bytes] = {}
    out: list[bytes] = []
    encoded = 0
    for name in names:
        stamp = stamps.get(name, -1)
        if kept_stamps.get(name) == stamp:
            entry = kept_entries[name]
            if into is not kept:
                into_stamps[name] = stamp
                into_entries[name] = entry
        else:
            entry = encode_topic(layout, name, ids.get(name, zero), name in INTERNAL_TOPICS, partitions[name], alive, memo)
            into_stamps[name] = stamp
            into_entries[name] = entry
            encoded += 1
        out.append(entry)
    if encoded:
        into.version += 1
    return out


def _assemble_replacement(
    snapshot: MetadataSnapshot, listener: str, layout: TopicLayout, kept: _Kept, names: Sequence[str] | None,
) -> tuple[list[bytes], _Kept]:
    """:func:`assemble` in a worker thread, and the kept entries to use from now on.

    *kept* is the thread's own copy.  For every topic (*names* None) the
    replacement holds exactly the topics of the snapshot (the entries of
    deleted topics are dropped); for some, the copy with the new entries.
    """
    into = _Kept() if names is None else kept
    return assemble(snapshot, listener, layout, kept, names, into), into


class MetadataAnswers:
    """The encoded topic entries of one metadata cache.

    Args:
        run_blocking: ``(fn, *args) -> Deferred`` running *fn* in a worker
            thread, or None to do everything inline.
        inline_partitions: partitions up to which work is done inline
            (:data:`INLINE_PARTITIONS` when None).
    """

    def __init__(self, run_blocking: Callable[..., defer.Deferred] | None = None, *,
                 inline_partitions: int | None = None) -> None:
        self.run_blocking = run_blocking
        self.inline_partitions = INLINE_PARTITIONS if inline_partitions is None else inline_partitions
        self._cache: MetadataCache | None = None
        self._kept: dict[_Key, _Kept] = {}
        self._arrays: dict[_Key, tuple[int, int, bytes]] = {}  # (generation, entries, joined)
        self._pending: dict[_Key, tuple[int, list[defer.Deferred]]] = {}  # all-topics arrays being built

    def topic_array(
        self, cache: MetadataCache, listener: str, layout: TopicLayout, names: Sequence[str] | None = None,
    ) -> tuple[int, bytes] | defer.Deferred:
        """(how many, the joined entries) of the existing topics *names* in order — or a Deferred of that.

        *names* None means every topic, sorted by name: that array is kept
        for the generation, and built once however many ask for it meanwhile.
        """
        key = self._key(cache, listener, layout)
        snapshot = cache.snapshot()
        if names is not None:
            return then(self._entries(key, snapshot, listener, layout, names), _joined)
        generation = snapshot.generation
        kept = self._arrays.get(key)
        if kept is not None and kept[0] == generation:
            return kept[1], kept[2]
        pending = self._pending.get(key)
        if pending is not None and pending[0] == generation:
            waiter: defer.Deferred = defer.Deferred()
            pending[1].append(waiter)
            return waiter

        def keep(fragments: list[bytes]) -> tuple[int, bytes]:
            array = _joined(fragments)
            current = self._arrays.get(key)
            if current is None or current[0] <= generation:
                self._arrays[key] = (generation, *array)
            return array

        result = self._entries(key, snapshot, listener, layout, None)
        if not isinstance(result, defer.Deferred):
            return keep(result)
        waiters: list[defer.Deferred] = []
        self._pending[key] = (generation, waiters)

        def done() -> None:
            current = self._pending.get(key)
            if current is not None and current[1] is waiters:
                del self._pending[key]

        def answered(array: tuple[int, bytes]) -> tuple[int, bytes]:
            done()
            for d in waiters:
                d.callback(array)
            return array

        def failed(failure: Any) -> Any:
            done()
            for d in waiters:
                d.errback(failure)
            return failure

        result.addCallback(keep)
        result.addCallbacks(answered, failed)
        return result

    def entries(
        self, cache: MetadataCache, listener: str, layout: TopicLayout, names: Sequence[str],
    ) -> list[bytes] | defer.Deferred:
        """The entries of the existing topics *names*, in order, one per topic (or a Deferred of them)."""
        return self._entries(self._key(cache, listener, layout), cache.snapshot(), listener, layout, names)

    # ------------------------------------------------------------------ internals

    def _key(self, cache: MetadataCache, listener: str, layout: TopicLayout) -> _Key:
        if cache is not self._cache:  # another cache's stamps mean nothing here
            self._cache = cache
            self._kept.clear()
            self._arrays.clear()
            self._pending.clear()
        return listener, layout

    def _entries(
        self, key: _Key, snapshot: MetadataSnapshot, listener: str, layout: TopicLayout, names: Sequence[str] | None,
    ) -> list[bytes] | defer.Deferred:
        kept = self._kept.setdefault(key, _Kept())
        if names is None:
            size = snapshot.partition_count()
        else:
            partitions = snapshot.partitions
            size = sum(len(partitions[name]) for name in names)
        if self.run_blocking is None or size <= self.inline_partitions:
            fragments = assemble(snapshot, listener, layout, kept, names, kept)
            if names is None and len(kept.stamps) > len(snapshot.partitions):  # topics were deleted
                kept.prune(snapshot.partitions)
            return fragments
        cache, version = self._cache, kept.version

        def install(result: tuple[list[bytes], _Kept]) -> list[bytes]:
            fragments, replacement = result
            if self._cache is not cache:  # replaced meanwhile: its stamps would mean nothing
                return fragments
            current = self._kept.get(key)
            if current is kept and kept.version == version:
                self._kept[key] = replacement  # nothing installed meanwhile: the thread's is whole
            elif current is not None:
                current.merge(replacement)
            return fragments

        # The reactor goes on installing into its own entries: the thread gets a copy.
        d = self.run_blocking(_assemble_replacement, snapshot, listener, layout, kept.copy(), names)
        return d.addCallback(install)


def _joined(fragments: list[bytes]) -> tuple[int, bytes]:
    return len(fragments), b"".join(fragments)


def then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn(value)``, or a Deferred of it when *value* is a Deferred (the synchronous path stays synchronous)."""
    if isinstance(value, defer.Deferred):
        return value.addCallback(fn)
    return fn(value)
