"""Exactly-once under faults, short version (``make chaos`` runs the long one: ``scripts/chaos_run.py --eos``).

A transactional consume-transform-produce app (3 confluent-kafka member
processes, KIP-447: one transactional id per member, offsets sent with the
consumer group metadata) copies topic A to topic B while A is being filled, and
the faults below are injected one at a time, in this order, each healed — and
the app seen committing on every partition again — before the next
(``tests/harness/txn_chaos.py``; about a minute of faults, longer when a
member hits librdkafka's ``send_offsets_to_transaction`` hang after its group
coordinator's broker dropped out of the metadata and its watchdog restarts it):

* SIGKILL + restart of the transaction coordinator of a member's transactional id;
* SIGKILL of a member process (restarted: its new instance fences the old one and
  aborts its open transaction);
* SIGKILL + restart of the group coordinator;
* a zombie member: a member stops itself (SIGSTOP) with a transaction's records in
  B but its offsets not yet sent, and is resumed past the group session timeout —
  its partitions have moved, its generation is over, its transaction must abort;
* SIGSTOP of a member's transaction coordinator past the ZooKeeper session timeout
  (a zombie broker);
* a zombie member again, stopped after its offsets were sent (before the commit):
  the partitions' new owner must not read the committed offsets until that
  transaction is over (KIP-447's ``require_stable``).

Then B, read with read_committed, must hold every record of A exactly once, in A's
order per partition (``check_exactly_once``), the group's committed offsets must
equal A's end offsets, and — the negative control — B read with read_uncommitted
must show the records of the transactions the members aborted on purpose as
duplicates, which the same checker flags.
"""

from __future__ import annotations

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.txn_chaos import EosSettings, cluster_settings, run_eos

# In `make test` again since 2026-11-26. About once in thirty runs B used to get one partition of
# A twice; the cause was librdkafka's, not the broker's: a member whose OffsetFetch waits on
# offsets held by a zombie's open transaction (UNSTABLE_OFFSET_COMMIT, as KIP-447 wants) and whose
# assignment changes meanwhile starts the partition at auto.offset.reset (offset 0) — reproduced
# deterministically by
# test_transactions.py::test_librdkafka_starts_a_reassigned_partition_at_the_reset_position_while_its_offsets_are_pending.
# The app works around it (txn_chaos: each assignment starts at offsets read with committed(),
# which waits until they are stable, then assign()).
pytestmark = [pytest.mark.integration]

SCHEDULE = ("kill-txn-coordinator", "kill-member", "kill-group-coordinator", "zombie-member",
            "pause-txn-coordinator", "zombie-member")


CLUSTER = ClusterSpec(settings=cluster_settings(), shared=False)  # kills and freezes brokers


def test_consume_transform_produce_copies_every_record_exactly_once_under_faults(cluster, tmp_path):
    lines: list[str] = []
    settings = EosSettings(duration=30.0, interval=(0.5, 1.0), seed=20260101, faults=SCHEDULE, schedule="cycle",
                           partitions=3, members=3, rate=100.0, abort_every=10, catch_up_timeout=150.0, settle=90.0)
    result = run_eos(cluster, settings, tmp_path / "app", say=lines.append)
    summary = result.summary()
    print("\n".join(result.log))
    print(summary)
    where = f"\napp logs in {tmp_path / 'app'}, broker logs in {cluster.directory}\n" + "\n".join(lines[-40:])
    assert result.error is None, summary + where
    # every scheduled fault ran, on a working app; both zombies froze
    assert set(result.faults) == set(SCHEDULE), summary + where
    assert not result.unhealed, summary + where
    zombies = result.figures["zombie members (stage: what the zombie's transaction did next)"]
    assert {k.split(":")[0] for k in zombies} == {"produced", "offsets-sent"}, summary + where
    assert result.report is not None and result.report.ok, summary + where
    assert result.report.source_records >= 2000, summary + where
    assert result.caught_up and result.final_committed == result.ends, summary + where
    assert result.source_delivery is not None and result.source_delivery.ok, summary + where
    assert all(r.identical for r in result.replicas.values()), summary + where
    # the negative control: what the app aborted on purpose was in B's log, and read_uncommitted shows it
    injected = result.figures["records in injected aborts"]
    assert injected > 0, summary + where
    assert result.uncommitted is not None and result.uncommitted.extra_copies >= injected, summary + where
    assert not result.uncommitted.lost and not result.uncommitted.reordered, summary + where
    assert result.ok, summary + where
