"""How many examples each property test draws: all of them, or a share under ``make test``.

``make test`` is the gate every stop passes through, on a 2-core machine, and the
property tests were a third of its CPU; it sets ``MAFKA_HYPOTHESIS_SHARE=0.15``.
``make unit`` (and a plain ``pytest``) draws every example.  Hypothesis seeds each run
afresh, so runs of the gate keep exploring different examples.

Property tests say ``@settings(max_examples=examples(N))``; the ones that name no
count get the default profile registered in ``tests/conftest.py``
(``examples(100)``, Hypothesis's own default).
"""

from __future__ import annotations

import math
import os

#: the share of each test's examples to draw (``MAFKA_HYPOTHESIS_SHARE``, 1 by default)
SHARE = float(os.environ.get("MAFKA_HYPOTHESIS_SHARE", "1"))

#: never fewer than this many examples (or all of them, where a test asks for fewer)
FLOOR = 5


def examples(n: int) -> int:
    """*n* scaled by :data:`SHARE`: at least ``min(n, FLOOR)``, never more than *n*."""
    if SHARE >= 1:
        return n
    return min(n, max(FLOOR, math.ceil(n * SHARE)))
