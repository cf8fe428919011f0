"""Writing Kafka's JSON bytes: Jackson's compact writer and the key orders of Kafka's maps.

Owns :func:`encode_json` (what ``Json.encodeAsBytes`` writes, escapes
included) and the emulated iteration orders of the Scala and Java maps Kafka
builds its znode JSON from (``_scala_immutable_map``, ``_scala_mutable_map``,
``_java_hash_map``, ``_java_properties``), plus the ``{"version":…,"partitions":[…]}``
partition list that several znodes share.  The znode classes in the sibling
modules build their JSON only through these helpers; see the package
docstring (:mod:`mafka.coordination.znodes`) for the contract.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mafka.topics import TopicPartitionTuple

__all__ = ["encode_json"]


# --------------------------------------------------------------------------- JSON writer

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def _write_json(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, str):
        out.append('"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"')
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
            _write_json(key, out)
            out.append(":")
            _write_json(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write_json(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as Kafka JSON")


def encode_json(value: Any) -> bytes:
    """Compact JSON exactly as Jackson's default ``ObjectMapper`` writes it, in UTF-8.

    Mappings are written in their iteration order (build them with the key
    order Kafka's maps have).  Supports None, bool, int, str, mappings with str
    keys, lists and tuples.

    Raises:
        TypeError: For any other value (floats included).
        UnicodeEncodeError: For strings with lone surrogates.
    """
    out: list[str] = []
    _write_json(value, out)
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- Kafka's map orders


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x1_0000_0000 if x & 0x8000_0000 else x


def _java_hash(s: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as a signed int."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
    return _i32(h)


def _spread16(h: int) -> int:
    """``h ^ (h >>> 16)``: java.util.HashMap's and Scala mutable.HashMap's hash improvement."""
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 16))


def _scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` (immutable.HashMap's key hash)."""
    h = _i32(h + ~_i32(h << 9))
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 10))


def _dedupe(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    # A later put of an existing key replaces the value in place (all the maps below).
    out: dict[str, Any] = {}
    for key, value in pairs:
        out[key] = value
    return out


def _scala_immutable_map(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of Scala 2.13's ``immutable.Map(pairs…)`` / ``Seq.toMap``.

    Up to 4 entries (``Map1``–``Map4``): insertion order.  From 5 on: a CHAMP
    trie, iterated depth-first, each node's own entries (by 5-bit hash chunk,
    lowest bits first) before its sub-nodes.
    """
    entries = _dedupe(pairs)
    if len(entries) <= 4:
        return entries
    return {key: entries[key] for key in _champ_order(tuple(entries))}


@functools.lru_cache(maxsize=256)
def _champ_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The CHAMP iteration order of *keys* (given in insertion order).

    It depends on the keys alone, and the maps Kafka writes this way have a
    few fixed key sets (a partition state's five keys, written for every
    partition a controller touches): computed once per key set.
    """
    hashed = [(key, _scala_improve(_java_hash(key)) & 0xFFFFFFFF) for key in keys]

    def walk(items: list[tuple[str, int]], shift: int) -> list[str]:
        if shift >= 32:  # full hash collision: insertion order
            return [key for key, _ in items]
        groups: dict[int, list[tuple[str, int]]] = {}
        for item in items:
            groups.setdefault((item[1] >> shift) & 31, []).append(item)
        order = sorted(groups)
        out = [groups[m][0][0] for m in order if len(groups[m]) == 1]
        for m in order:
            if len(groups[m]) > 1:
                out += walk(groups[m], shift + 5)
        return out

    return tuple(walk(hashed, 0))


def _scala_table_size_for(capacity: int) -> int:
    return min(1 << ((max(capacity - 1, 4)).bit_length() - 1) << 1, 1 << 30)


def _scala_mutable_map(
    pairs: Iterable[tuple[str, Any]], initial_entries: int = 0
) -> dict[str, Any]:
    """The iteration order of Scala 2.13's ``mutable.HashMap``.

    Args:
        pairs: Entries in insertion order.
        initial_entries: How many entries the map was *constructed* with
            (``mutable.Map(a, b, c)`` sizes its table for them); 0 for
            ``mutable.Map()``.
    """
    entries = _dedupe(pairs)
    if initial_entries > 0:
        table = _scala_table_size_for(int((initial_entries + 1) / 0.75))
    else:
        table = _scala_table_size_for(16)
    size = 0
    for _ in entries:
        if size + 1 >= int(table * 0.75):  # put0 grows before inserting
            table *= 2
        size += 1
    keyed = []
    for index, key in enumerate(entries):
        h = _spread16(_java_hash(key))
        keyed.append(((h & (table - 1)), h, index, key))
    keyed.sort()
    return {key: entries[key] for *_, key in keyed}


def _java_hash_map(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of ``java.util.HashMap`` (default capacity) after these puts.

    Buckets in table order, insertion order within a bucket (resizes keep it).
    Tree bins (8+ keys in one bucket of a 64+ table) are not modelled.
    """
    entries = _dedupe(pairs)
    table, threshold = 16, 12
    for size in range(1, len(entries) + 1):
        if size > threshold:
            table, threshold = table * 2, threshold * 2
    keyed = sorted(
        (
            (_spread16(_java_hash(key)) & (table - 1), index, key)
            for index, key in enumerate(entries)
        ),
    )
    return {key: entries[key] for *_, key in keyed}


def _java_properties(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of ``java.util.Properties`` on Java 9+ after these ``put``s.

    Java 9+ keeps a Properties' entries in a ``ConcurrentHashMap(8)`` (a
    16-slot table resized at 75 %).  Bins are appended to; a resize splits
    each bin keeping its tail run and prepending the nodes before it; a bin of
    8+ nodes in a table under 64 slots presizes the table instead of turning
    into a tree, and tree bins take new keys at their head.
    """
    entries = _dedupe(pairs)
    hashes = {key: _spread16(_java_hash(key)) & 0x7FFFFFFF for key in entries}
    n, size_ctl = 16, 12
    bins: list[list[str]] = [[] for _ in range(n)]
    trees: set[int] = set()
    count = 0

    def transfer() -> None:
        nonlocal n, size_ctl, bins, trees
        new_bins: list[list[str]] = [[] for _ in range(2 * n)]
        new_trees: set[int] = set()
        for i, chain in enumerate(bins):
            if not chain:
                continue
            if i in trees:
                lo = [k for k in chain if not hashes[k] & n]
                hi = [k for k in chain if hashes[k] & n]
                new_bins[i], new_bins[i + n] = lo, hi
                if len(lo) > 6:
                    new_trees.add(i)
                if len(hi) > 6:
                    new_trees.add(i + n)
                continue
            run_bit, last_run = hashes[chain[0]] & n, 0
            for j in range(1, len(chain)):
                bit = hashes[chain[j]] & n
                if bit != run_bit:
                    run_bit, last_run = bit, j
            lo_list: list[str] = [] if run_bit else chain[last_run:]
            hi_list: list[str] = chain[last_run:] if run_bit else []
            for key in chain[:last_run]:
                if hashes[key] & n:
                    hi_list.insert(0, key)
                else:
                    lo_list.insert(0, key)
            new_bins[i], new_bins[i + n] = lo_list, hi_list
        size_ctl = (n << 1) - (n >> 1)
        n, bins, trees = 2 * n, new_bins, new_trees

    for key in entries:
        i = hashes[key] & (n - 1)
        chain = bins[i]
        bin_count = len(chain)
        if i in trees:
            chain.insert(0, key)
        else:
            chain.append(key)
            if bin_count >= 8:
                if n < 64:  # treeifyBin → tryPresize(n << 1)
                    want = n << 1
                    c = 1 << (want + (want >> 1) + 1 - 1).bit_length()
                    while not (c <= size_ctl):
                        transfer()
                else:
                    trees.add(i)
        count += 1
        while count >= size_ctl:
            transfer()
    return {key: entries[key] for chain in bins for key in chain}


def _encode_partitions(version: int, partitions: Iterable[TopicPartitionTuple]) -> bytes:
    items = [
        _scala_immutable_map([("topic", str(t)), ("partition", int(p))]) for t, p in partitions
    ]
    return encode_json(_scala_immutable_map([("version", version), ("partitions", items)]))
