"""FindCoordinator answers COORDINATOR_NOT_AVAILABLE (no coordinator yet) instead of closing the connection."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, decode_response, encode_request


def test_find_coordinator_is_answered_with_coordinator_not_available():
    dispatcher = Dispatcher(collect_handlers(None))
    for version in (0, 1, 2):
        request = decode_request(encode_request(10, version, 3, "c", {"key": "group", "key_type": 0})[4:])
        chunks = dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT"))
        _, body = decode_response(10, version, b"".join(chunks)[4:])
        assert (body.error_code, body.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
