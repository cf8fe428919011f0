"""Reading a slow-node report back: what the rebalancer and ``mafka cluster-status`` accept.

A report is the JSON each broker writes to its ephemeral
``/mafka/monitor/<broker-id>`` znode (:func:`mafka.broker.monitor.build_report`
describes its fields).  Readers act only on a report that is well formed and
recent; anything else — missing, stale, malformed — is ignored, never acted on.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["REPORT_VERSION", "parse_report"]

#: The ``version`` field of the reports this code writes and reads.
REPORT_VERSION = 1


def parse_report(data: bytes, now_ms: int, max_age_ms: int) -> dict[str, Any] | None:
    """A report read back, or None if malformed or older than ``max_age_ms`` (never acted on)."""
    try:
        report = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(report, dict) or report.get("version") != REPORT_VERSION \
            or not isinstance(report.get("broker"), int):
        return None
    if not isinstance(report.get("timestamp"), int) or now_ms - report["timestamp"] > max_age_ms:
        return None
    if not isinstance(report.get("logDirs"), list) or not isinstance(report.get("partitions"), list):
        return None
    return report
