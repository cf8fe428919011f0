"""The internal blocking client against a tiny fake broker (one thread, real sockets)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mafka.client.blocking import BlockingClient, ClientTimeout, parse_bootstrap
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, encode_response


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    with pytest.raises(ValueError, match="Invalid url"):
        parse_bootstrap("a")
    with pytest.raises(ValueError):
        parse_bootstrap("")


class FakeBroker:
    """Answers Metadata; the first ``not_controller`` CreateTopics get NOT_CONTROLLER."""

    def __init__(self, not_controller: int = 0) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.not_controller = not_controller
        self.requests: list[int] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                frame = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                request = decode_request(frame)
                self.requests.append(request.header.api_key)
                conn.sendall(encode_response(request.header, self.answer(request)))

    def answer(self, request: Any) -> dict[str, Any]:
        if request.header.api_key == 3:
            return {
                "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port, "rack": None}],
                "cluster_id": "c",
                "controller_id": 1,
                "topics": [{"error_code": 0, "name": "t", "is_internal": False, "partitions": [
                    {"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                ]}],
            }
        if request.header.api_key == 19:
            code = ErrorCode.NOT_CONTROLLER if self.not_controller > 0 else ErrorCode.NONE
            self.not_controller -= 1
            return {"topics": [{"name": t.name, "error_code": code, "error_message": None} for t in request.body.topics]}
        raise AssertionError(request.header.api_key)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    b = FakeBroker(not_controller=2)
    yield b
    b.close()


def test_metadata_and_lookups(broker: FakeBroker) -> None:
    with BlockingClient(f"127.0.0.1:{broker.port}", timeout_s=5) as client:
        md = client.metadata()
        assert [t.name for t in md.topics] == ["t"]
        assert client.brokers == {1: ("127.0.0.1", broker.port)}
        assert client.controller_id() == 1
        assert client.leader_for("t", 0) == 1
        assert client.partitions_for("t") == {0: 1}


def test_controller_call_retries_not_controller(broker: FakeBroker) -> None:
    body = {"topics": [{"name": "x", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 1000, "validate_only": False}
    with BlockingClient(f"127.0.0.1:{broker.port}", timeout_s=5) as client:
        response = client.call_controller(19, body, lambda r: [t.error_code for t in r.topics])
    assert response.topics[0].error_code == ErrorCode.NONE
    assert broker.requests.count(19) == 3


def test_connection_refused_times_out() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with BlockingClient(f"127.0.0.1:{port}", timeout_s=0.5) as client, pytest.raises(ClientTimeout):
        client.metadata()
