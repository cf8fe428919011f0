"""DescribeTransactions (api key 65), decoded at v0 (KIP-664, Kafka 3.0).

Flexible from v0.  Per transactional id, its coordinator's view: state,
producer id and epoch, timeout, start time and the partitions of the open
transaction (while PrepareCommit / PrepareAbort, only those still without a
marker).  Sent to each id's transaction coordinator (FindCoordinator key
type 1); other brokers answer NOT_COORDINATOR for the id.

Fields follow Kafka's ``DescribeTransactionsRequest.json`` /
``DescribeTransactionsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    65,
    "DescribeTransactions",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("transactional_ids", "[]string", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("transaction_states", "[]TransactionState", "0+",
            F("error_code", "int16", "0+"),
            F("transactional_id", "string", "0+"),
            F("transaction_state", "string", "0+"),
            F("transaction_timeout_ms", "int32", "0+"),
            F("transaction_start_time_ms", "int64", "0+"),
            F("producer_id", "int64", "0+"),
            F("producer_epoch", "int16", "0+"),
            F("topics", "[]TopicData", "0+",
                F("topic", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ],
)
