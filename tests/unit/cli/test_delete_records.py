"""``mafka delete-records``: Kafka 2.8's ``kafka-delete-records.sh`` (argument and JSON checks, output, fake wire)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mafka.cli import delete_records as dr
from mafka.cli.main import main
from mafka.errors import ErrorCode
from tests.unit.cli.fake_wire import WireFake


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), 'Missing required argument "[bootstrap-server]"'),
        (("--bootstrap-server", "b:1"), 'Missing required argument "[offset-json-file]"'),
        (("--bootstrap-server", "b:1", "--offset-json-file", "/nonexistent/offsets.json"),
         "java.nio.file.NoSuchFileException: /nonexistent/offsets.json"),
    ],
)
def test_argument_errors(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["delete-records", *argv]) == 1
    assert capsys.readouterr() == ("", message + "\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "kafka.admin.AdminOperationException: The input string is not a valid JSON"),
        ('{"version":2,"partitions":[]}', "kafka.admin.AdminOperationException: Not supported version field value 2"),
        ('{"version":1}', "kafka.admin.AdminOperationException: Missing partitions field"),
        ('{"partitions":[{"topic":"t","partition":0}]}',
         "com.fasterxml.jackson.databind.JsonMappingException: No such field exists: `offset`"),
        ('{"partitions":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":0,"offset":2}]}',
         "kafka.common.AdminCommandFailedException: Offset json file contains duplicate topic partitions: t-0"),
    ],
)
def test_offset_json_errors(text: str, message: str) -> None:
    with pytest.raises(dr.CommandError) as caught:
        dr.parse_offset_json(text)
    assert str(caught.value) == message


def test_offset_json_default_version_and_order() -> None:
    assert dr.parse_offset_json('{"partitions":[{"topic":"b","partition":1,"offset":-1},'
                                '{"topic":"a","partition":0,"offset":7}]}') == [(("b", 1), -1), (("a", 0), 7)]


def test_result_lines() -> None:
    assert dr.format_results({("t", 1): "org.apache.kafka.common.errors.X: y", ("t", 0): 42}) == [
        "partition: t-0\tlow_watermark: 42",
        "partition: t-1\terror: org.apache.kafka.common.errors.X: y",
    ]


class RecordsCluster(WireFake):
    """Brokers 1 and 2; t-0 led by 1, t-1 by 2 (log end 10 each)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093)})
        self.leaders = {("t", 0): 1, ("t", 1): 2}
        self.start = {("t", 0): 0, ("t", 1): 0}

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = ["t"] if req.topics is None else [t.name for t in req.topics]
        return {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": 1,
            "topics": [{"error_code": 0 if n == "t" else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": n,
                        "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": b, "replica_nodes": [b],
                                        "isr_nodes": [b], "offline_replicas": []}
                                       for (t, p), b in sorted(self.leaders.items()) if t == n]} for n in names],
        }

    def _DeleteRecords(self, req: Any, broker: int) -> dict[str, Any]:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                assert self.leaders[tp] == broker, "sent to the leader"
                offset = 10 if p.offset == -1 else p.offset
                if offset > 10:
                    parts.append({"partition_index": tp[1], "low_watermark": -1,
                                  "error_code": ErrorCode.OFFSET_OUT_OF_RANGE})
                    continue
                self.start[tp] = max(self.start[tp], offset)
                parts.append({"partition_index": tp[1], "low_watermark": self.start[tp], "error_code": 0})
            topics.append({"name": t.name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}


def test_deletes_at_the_leaders_and_prints_kafkas_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = RecordsCluster()
    cluster.install(monkeypatch)
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 1, "offset": -1},
        {"topic": "t", "partition": 0, "offset": 4},
        {"topic": "t", "partition": 7, "offset": 1},
        {"topic": "gone", "partition": 0, "offset": 1},
    ]}))
    assert main(["delete-records", "--bootstrap-server", "b1:9092", "--offset-json-file", str(path)]) == 0
    out, err = capsys.readouterr()
    # stdout is Kafka's; stderr (not a terminal here) holds the progress summary alone
    assert re.fullmatch(r"delete-records: 4/4 partitions done \(100%\) in \d+\.\d s\n", err), err
    assert out == ("\n".join([
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: gone-0\terror: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "This server does not host this topic-partition.",
        "partition: t-0\tlow_watermark: 4",
        "partition: t-1\tlow_watermark: 10",
        "partition: t-7\terror: org.apache.kafka.common.errors.LeaderNotAvailableException: "
        "There is no leader for this topic-partition as we are in the middle of a leadership election.",
    ]) + "\n")
    assert sorted(broker for _, broker in cluster.api_calls(21)) == [1, 2]

    path.write_text('{"partitions":[{"topic":"t","partition":0,"offset":11}],"version":1}')
    assert main(["delete-records", "--bootstrap-server", "b1:9092", "--offset-json-file", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "partition: t-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "The requested offset is not within the range of offsets maintained by the server.")
    assert cluster.start[("t", 0)] == 4
