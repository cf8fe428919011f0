"""``kafka-transactions.sh`` (KIP-664) against a 3-broker cluster with confluent-kafka's transactional producers.

* an open transaction: ``list`` shows it Ongoing at its coordinator, ``describe``
  shows its partition and start time, ``describe-producers`` the open
  transaction's first offset, which holds read_committed consumers (the LSO);
* ``abort --start-offset`` writes the ABORT marker: the LSO moves past the
  transaction, a read_committed consumer skips its records and reads what
  followed; the coordinator still counts the transaction open until the
  producer ends it (CompleteAbort), a committed one shows CompleteCommit;
* ``abort --producer-id --producer-epoch --coordinator-epoch`` (the form for
  brokers older than 3.0) does the same; an older producer epoch is refused;
* ``find-hanging`` does not report a transaction its coordinator knows about;
* the flag spellings (``--list`` …) and the ``kafka-transactions.sh`` script.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

from .test_transactions import SETTINGS as TXN_SETTINGS
from .test_transactions import end_offsets, read_all, txn_producer

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


#: test_transactions' cluster (its settings are this module's own and the 500 ms abort of timed-out
#: transactions; none here runs for its 60 s timeout): uuid topic and transactional ids
CLUSTER = ClusterSpec(settings=TXN_SETTINGS)


def new_topic(cluster: LocalCluster) -> str:
    name = f"tools-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3)])[name].result(30)
    return name


def tool(cluster: LocalCluster, *argv: str, script: str = "mafka") -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "mafka"), "transactions"] if script == "mafka" else [str(BIN / script)]
    return subprocess.run([*command, "--bootstrap-server", cluster.bootstrap, *argv],
                          capture_output=True, text=True, timeout=60)


def table(r: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    """The rows of a ``prettyPrintTable`` as dicts by header."""
    assert (r.returncode, r.stderr) == (0, ""), r
    lines = r.stdout.splitlines()
    assert all(line.endswith("\t") for line in lines), lines
    headers = [h.strip() for h in lines[0].split("\t")[:-1]]
    return [dict(zip(headers, (v.strip() for v in line.split("\t")[:-1]), strict=True)) for line in lines[1:]]


def listed(cluster: LocalCluster, txn_id: str, flag: bool = False) -> dict[str, str] | None:
    rows = table(tool(cluster, "--list") if flag else tool(cluster, "list"))
    return next((row for row in rows if row["TransactionalId"] == txn_id), None)


def describe(cluster: LocalCluster, txn_id: str) -> dict[str, str]:
    [row] = table(tool(cluster, "describe", "--transactional-id", txn_id))
    return row


def producers(cluster: LocalCluster, topic: str) -> dict[str, dict[str, str]]:
    rows = table(tool(cluster, "describe-producers", "--topic", topic, "--partition", "0"))
    return {row["ProducerId"]: row for row in rows}


def state_becomes(cluster: LocalCluster, txn_id: str, state: str) -> dict[str, str]:
    wait_until(lambda: describe(cluster, txn_id)["TransactionState"] == state, 30, f"{txn_id} {state}", interval=0.3)
    return describe(cluster, txn_id)


def test_list_describe_and_abort_an_open_transaction_by_start_offset(cluster):
    topic = new_topic(cluster)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    plain.produce(topic, b"before", partition=0)
    plain.flush(30)
    open_id, done_id = f"open-{uuid.uuid4().hex[:6]}", f"done-{uuid.uuid4().hex[:6]}"
    stuck = txn_producer(cluster, open_id)
    stuck.begin_transaction()
    for i in range(3):
        stuck.produce(topic, f"stuck-{i}".encode(), partition=0)
    stuck.flush(30)
    other = txn_producer(cluster, done_id)
    other.begin_transaction()
    other.produce(topic, b"after", partition=0)
    other.commit_transaction(30)

    # list: at each id's coordinator, with its producer id and state.
    row = listed(cluster, open_id)
    assert row is not None and row["TransactionState"] == "Ongoing", row
    d = describe(cluster, open_id)
    assert (d["CoordinatorId"], d["ProducerId"]) == (row["Coordinator"], row["ProducerId"])
    assert (d["TransactionalId"], d["ProducerEpoch"], d["TransactionState"], d["TransactionTimeoutMs"]) == (
        open_id, "0", "Ongoing", "60000")
    assert d["TopicPartitions"] == f"{topic}-0"
    started = int(d["CurrentTransactionStartTimeMs"])
    assert abs(time.time() * 1000 - started) < 60_000 and int(d["TransactionDurationMs"]) >= 0
    state_becomes(cluster, done_id, "CompleteCommit")
    assert listed(cluster, done_id, flag=True)["TransactionState"] == "CompleteCommit"

    # describe-producers: the open transaction starts at offset 1 and holds read_committed there.
    by_pid = producers(cluster, topic)
    open_pid, done_pid = d["ProducerId"], describe(cluster, done_id)["ProducerId"]
    assert by_pid[open_pid]["CurrentTransactionStartOffset"] == "1"
    assert by_pid[open_pid]["LatestCoordinatorEpoch"] == "-1", "no marker yet"
    assert by_pid[done_pid]["CurrentTransactionStartOffset"] == "None"
    assert end_offsets(cluster, topic, 0, "read_committed") == 1
    assert read_all(cluster, topic, 1, "read_committed") == [b"before"]
    empty = table(tool(cluster, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"))
    assert empty == [], "its coordinator counts the partition in the transaction"

    # abort --start-offset: the ABORT marker at the leader; the LSO moves to the log end.
    missing = tool(cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2")
    assert (missing.returncode, missing.stderr) == (
        1, f"Could not find any open transactions starting at offset 2 on partition {topic}-0\n")
    r = tool(cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    log_end = end_offsets(cluster, topic, 0, "read_uncommitted")
    assert log_end == 7, "before, 3 open records, after, its commit marker, the abort marker"
    assert end_offsets(cluster, topic, 0, "read_committed") == log_end
    assert read_all(cluster, topic, 1, "read_committed") == [b"before", b"after"]
    assert producers(cluster, topic)[open_pid]["CurrentTransactionStartOffset"] == "None"
    assert producers(cluster, topic)[open_pid]["LatestCoordinatorEpoch"] == "0"

    # The coordinator still counts it open until the producer ends it.
    assert describe(cluster, open_id)["TransactionState"] == "Ongoing"
    stuck.abort_transaction(30)
    ended = state_becomes(cluster, open_id, "CompleteAbort")
    assert (ended["TopicPartitions"], ended["ProducerId"]) == ("", open_pid)
    assert listed(cluster, open_id)["TransactionState"] == "CompleteAbort"
    assert read_all(cluster, topic, 1, "read_committed") == [b"before", b"after"]


def test_abort_by_producer_id_epoch_and_coordinator_epoch(cluster):
    topic = new_topic(cluster)
    txn_id = f"older-{uuid.uuid4().hex[:6]}"
    p = txn_producer(cluster, txn_id)
    p.begin_transaction()
    p.produce(topic, b"first", partition=0)
    p.commit_transaction(30)  # a marker: the producer's coordinator epoch is now known
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(30)
    pid = describe(cluster, txn_id)["ProducerId"]
    row = producers(cluster, topic)[pid]
    assert row["CurrentTransactionStartOffset"] == "2"
    assert int(row["LatestCoordinatorEpoch"]) >= 0
    assert end_offsets(cluster, topic, 0, "read_committed") == 2

    stale = tool(cluster, "abort", "--topic", topic, "--partition", "0", "--producer-id", pid,
                 "--producer-epoch", str(int(row["ProducerEpoch"]) - 1), "--coordinator-epoch",
                 row["LatestCoordinatorEpoch"])
    assert stale.returncode == 1 and stale.stderr.startswith(
        f"Failed to abort transaction AbortTransactionSpec(topicPartition={topic}-0, producerId={pid}, "), stale
    assert "failed due an invalid producer epoch. Enable debug logging for additional detail.\n" in stale.stderr
    assert end_offsets(cluster, topic, 0, "read_committed") == 2, "an older producer epoch aborts nothing"
    r = tool(cluster, "--abort", "--topic", topic, "--partition", "0", "--producer-id", pid,
             "--producer-epoch", row["ProducerEpoch"], "--coordinator-epoch", row["LatestCoordinatorEpoch"],
             script="kafka-transactions.sh")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert end_offsets(cluster, topic, 0, "read_committed") == end_offsets(cluster, topic, 0, "read_uncommitted")
    assert read_all(cluster, topic, 1, "read_committed") == [b"first"]

    p.commit_transaction(30)  # the coordinator's COMMIT marker finds no open transaction there
    assert state_becomes(cluster, txn_id, "CompleteCommit")["TopicPartitions"] == ""
    assert read_all(cluster, topic, 1, "read_committed") == [b"first"], "aborted records stay aborted"
