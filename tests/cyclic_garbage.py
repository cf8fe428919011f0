"""Counting the cyclic garbage a piece of code leaves (for tests of code that must leave none).

Why it matters: a broker freezes its heap after every full collection
(:mod:`mafka.heap_freezer`), so a reference cycle alive at that moment is
freed only by the next whole collection -- seconds of pause at 100,000
partitions.  Code that runs per request or per ZooKeeper answer should free
what it made by reference counting alone.
"""

from __future__ import annotations

import collections
import gc
from collections.abc import Callable
from typing import Any

from mafka.heap_freezer import garbage_census

__all__ = ["cyclic_garbage"]


def cyclic_garbage(fn: Callable[[], Any]) -> collections.Counter[str]:
    """Runs *fn* with the collector off; the objects it left in unreachable cycles, by type
    (``module.qualname``, :func:`mafka.heap_freezer.garbage_census`).

    Everything *fn* returns is dropped first.  Garbage made before is collected before.
    """
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        fn()
        return garbage_census()
    finally:
        if was:
            gc.enable()
