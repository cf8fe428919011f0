"""ListTransactions (api key 66), decoded at v0 (KIP-664, Kafka 3.0).

Flexible from v0.  The transactions one broker's coordinator holds (the
ids of the ``__transaction_state`` partitions it leads), filtered by state
names and producer ids (an empty filter matches everything); state names
the coordinator does not know come back in ``unknown_state_filters``.
Admin clients send it to every broker.

Fields follow Kafka's ``ListTransactionsRequest.json`` /
``ListTransactionsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    66,
    "ListTransactions",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("state_filters", "[]string", "0+"),
        F("producer_id_filters", "[]int64", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("unknown_state_filters", "[]string", "0+"),
        F("transaction_states", "[]TransactionState", "0+",
            F("transactional_id", "string", "0+"),
            F("producer_id", "int64", "0+"),
            F("transaction_state", "string", "0+"),
        ),
    ],
)
