"""Prometheus' text exposition format (0.0.4), written lean for tens of thousands of samples.

Why not ``prometheus_client.generate_latest``: it validates and escapes every
label name of every sample and builds a ``Sample`` per line — about 10 µs a
sample, half a second and half a million short-lived objects for the 50,000
series of a broker with 10,000 partitions, which in a broker process costs the
reactor a full garbage collection.  Here label names are Mafka's own (valid by
construction), label values are escaped only when they hold a character that
needs it, and the per-partition series arrive as ready :class:`TextBlock` lines.
``prometheus_client``'s families (and collectors such as the background pass
failure counter) are still accepted and written the same way; the output is
checked with ``prometheus_client.parser`` in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONTENT_TYPE", "TextBlock", "block", "exposition", "label_value", "number", "sample_line"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(slots=True)
class TextBlock:
    """One family as ready lines: ``name``, ``doc``, ``type`` and sample lines ending in a newline."""

    name: str
    doc: str
    type: str
    lines: list[str] = field(default_factory=list)


def label_value(value: str) -> str:
    """*value* escaped for a label value (backslash, double quote, newline)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return value


def number(value: float) -> str:
    """A sample value as prometheus_client writes it: always a float (``1.0``), ``NaN``, ``±Inf``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def sample_line(name: str, labels: dict[str, str] | None, value: float) -> str:
    """One sample's line; *labels* are Mafka's own names, their values escaped here, in name order
    (as prometheus_client writes them)."""
    if labels:
        inner = ",".join(f'{k}="{label_value(v)}"' for k, v in sorted(labels.items()))
        return f"{name}{{{inner}}} {number(value)}\n"
    return f"{name} {number(value)}\n"


def block(name: str, doc: str, kind: str, samples: Iterable[tuple[str, dict[str, str] | None, float]]) -> TextBlock:
    """A :class:`TextBlock` of ``(sample name, labels, value)`` samples."""
    return TextBlock(name, doc, kind, [sample_line(n, labels, v) for n, labels, v in samples])


def _doc(doc: str) -> str:
    return doc.replace("\\", "\\\\").replace("\n", "\\n")


def _metric_lines(metric: Any) -> list[str]:
    return [sample_line(s.name, {k: str(v) for k, v in s.labels.items()}, s.value) for s in metric.samples]


def exposition(families: Iterable[Any]) -> bytes:
    """The text of *families*: :class:`TextBlock` or ``prometheus_client`` metric families."""
    out: list[str] = []
    for family in families:
        if isinstance(family, TextBlock):
            name, doc, kind, lines = family.name, family.doc, family.type, family.lines
        else:
            name, doc, kind, lines = family.name, family.documentation, family.type, _metric_lines(family)
        if kind == "unknown":
            kind = "untyped"
        elif kind == "counter" and not name.endswith("_total"):
            name += "_total"  # the 0.0.4 format names a counter by its sample, as prometheus_client writes it
        out.append(f"# HELP {name} {_doc(doc)}\n# TYPE {name} {kind}\n")
        out.extend(lines)
    return "".join(out).encode("utf-8")
