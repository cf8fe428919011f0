"""``mafka broker-api-versions``: Kafka 2.8's ``kafka-broker-api-versions.sh`` for Mafka.

``--bootstrap-server H:P``: finds every broker (Metadata), asks each for its
ApiVersions and prints, per broker, Kafka 2.8's ``NodeApiVersions.toString(true)``::

    127.0.0.1:9092 (id: 1 rack: null) -> (
    <TAB>Produce(0): 0 to 9 [usable: 9],
    <TAB>Fetch(1): 0 to 11 [usable: 11],
    …
    <TAB>LeaderAndIsr(4): UNSUPPORTED,
    …
    )

"usable" is the highest version both the broker and Kafka 2.8.2's client
support (:data:`KAFKA_28_APIS`, the max versions of 2.8.2's request schemas);
an api Kafka 2.8's client knows for ZooKeeper-mode brokers that the broker
does not advertise prints ``UNSUPPORTED``, and one 2.8 does not know at all
``UNKNOWN(key): …``.  A broker that cannot be asked prints ``… -> ERROR: <exception>``.
Brokers are listed by id.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable
from typing import Any

from mafka.cli.clients import admin_config, java_exception
from mafka.client.config import parse_config
from mafka.client.kernel import Kernel
from mafka.client.metadata import BrokerInfo

__all__ = ["add_parser", "run", "KAFKA_28_APIS", "format_node", "format_api_versions", "broker_api_versions"]

API_VERSIONS = 18

#: Kafka 2.8.2's ``ApiKeys``: key → (name, oldest version, latest version, a ZooKeeper-mode broker api).
#: From ``clients/src/main/resources/common/message/*Request.json`` (``validVersions``, ``listeners``).
KAFKA_28_APIS: dict[int, tuple[str, int, int, bool]] = {
    0: ("Produce", 0, 9, True),
    1: ("Fetch", 0, 12, True),
    2: ("ListOffsets", 0, 6, True),
    3: ("Metadata", 0, 11, True),
    4: ("LeaderAndIsr", 0, 5, True),
    5: ("StopReplica", 0, 3, True),
    6: ("UpdateMetadata", 0, 7, True),
    7: ("ControlledShutdown", 0, 3, True),
    8: ("OffsetCommit", 0, 8, True),
    9: ("OffsetFetch", 0, 7, True),
    10: ("FindCoordinator", 0, 3, True),
    11: ("JoinGroup", 0, 7, True),
    12: ("Heartbeat", 0, 4, True),
    13: ("LeaveGroup", 0, 4, True),
    14: ("SyncGroup", 0, 5, True),
    15: ("DescribeGroups", 0, 5, True),
    16: ("ListGroups", 0, 4, True),
    17: ("SaslHandshake", 0, 1, True),
    18: ("ApiVersions", 0, 3, True),
    19: ("CreateTopics", 0, 7, True),
    20: ("DeleteTopics", 0, 6, True),
    21: ("DeleteRecords", 0, 2, True),
    22: ("InitProducerId", 0, 4, True),
    23: ("OffsetForLeaderEpoch", 0, 4, True),
    24: ("AddPartitionsToTxn", 0, 3, True),
    25: ("AddOffsetsToTxn", 0, 3, True),
    26: ("EndTxn", 0, 3, True),
    27: ("WriteTxnMarkers", 0, 1, True),
    28: ("TxnOffsetCommit", 0, 3, True),
    29: ("DescribeAcls", 0, 2, True),
    30: ("CreateAcls", 0, 2, True),
    31: ("DeleteAcls", 0, 2, True),
    32: ("DescribeConfigs", 0, 4, True),
    33: ("AlterConfigs", 0, 2, True),
    34: ("AlterReplicaLogDirs", 0, 2, True),
    35: ("DescribeLogDirs", 0, 2, True),
    36: ("SaslAuthenticate", 0, 2, True),
    37: ("CreatePartitions", 0, 3, True),
    38: ("CreateDelegationToken", 0, 2, True),
    39: ("RenewDelegationToken", 0, 2, True),
    40: ("ExpireDelegationToken", 0, 2, True),
    41: ("DescribeDelegationToken", 0, 2, True),
    42: ("DeleteGroups", 0, 2, True),
    43: ("ElectLeaders", 0, 2, True),
    44: ("IncrementalAlterConfigs", 0, 1, True),
    45: ("AlterPartitionReassignments", 0, 0, True),
    46: ("ListPartitionReassignments", 0, 0, True),
    47: ("OffsetDelete", 0, 0, True),
    48: ("DescribeClientQuotas", 0, 1, True),
    49: ("AlterClientQuotas", 0, 1, True),
    50: ("DescribeUserScramCredentials", 0, 0, True),
    51: ("AlterUserScramCredentials", 0, 0, True),
    52: ("Vote", 0, 0, False),
    53: ("BeginQuorumEpoch", 0, 0, False),
    54: ("EndQuorumEpoch", 0, 0, False),
    55: ("DescribeQuorum", 0, 0, False),
    56: ("AlterIsr", 0, 0, True),
    57: ("UpdateFeatures", 0, 0, True),
    58: ("Envelope", 0, 0, False),
    59: ("FetchSnapshot", 0, 0, False),
    60: ("DescribeCluster", 0, 0, True),
    61: ("DescribeProducers", 0, 0, True),
    62: ("BrokerRegistration", 0, 0, False),
    63: ("BrokerHeartbeat", 0, 0, False),
    64: ("UnregisterBroker", 0, 0, False),
}


class CommandError(Exception):
    """A usage error (stderr, exit status 1)."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "broker-api-versions",
        help="list the api versions every broker supports (kafka-broker-api-versions)",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: The server to connect to.")
    p.add_argument("--command-config", metavar="FILE",
                   help="A property file containing configs to be passed to Admin Client.")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def format_node(broker: BrokerInfo) -> str:
    """Java's ``Node.toString``: ``host:port (id: 1 rack: null)``."""
    rack = "null" if broker.rack is None else broker.rack
    return f"{broker.host}:{broker.port} (id: {broker.id} rack: {rack})"


def _version_text(key: int, low: int, high: int) -> str:
    """``NodeApiVersions.apiVersionToText``."""
    versions = str(low) if low == high else f"{low} to {high}"
    known = KAFKA_28_APIS.get(key)
    if known is None:
        return f"UNKNOWN({key}): {versions}"
    name, oldest, latest, _ = known
    if latest < low:
        usable = "[unusable: node too new]"
    elif high < oldest:
        usable = "[unusable: node too old]"
    else:
        usable = f"[usable: {min(latest, high)}]"
    return f"{name}({key}): {versions} {usable}"


def format_api_versions(supported: Iterable[tuple[int, int, int]]) -> str:
    """``NodeApiVersions.toString(true)`` of a broker's ApiVersions (api key, min, max)."""
    texts: dict[int, str] = {}
    for key, low, high in supported:
        texts[key] = _version_text(key, low, high)
    for key, (name, _, _, zk_broker) in KAFKA_28_APIS.items():
        if zk_broker and key not in texts:
            texts[key] = f"{name}({key}): UNSUPPORTED"
    return "(\n\t" + ",\n\t".join(texts[k] for k in sorted(texts)) + "\n)"


async def broker_api_versions(
    bootstrap: str, timeout_s: float, command_config: str | None = None
) -> list[tuple[BrokerInfo, list[tuple[int, int, int]] | str]]:
    """Every broker (by id) with its ApiVersions ``(key, min, max)`` list, or the error text.

    Raises:
        TimeoutError: no broker listed within ``timeout_s`` (Kafka waits forever).
    """
    kernel = Kernel(parse_config("admin", admin_config(bootstrap, "broker-api-versions-tool", timeout_s,
                                                       command_config)))
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    await kernel.refresh_metadata()
            except (ConnectionError, TimeoutError):
                pass
            if kernel.metadata.brokers:
                break
            if time.monotonic() >= deadline:
                raise TimeoutError("Timed out waiting for the cluster's brokers")
            await asyncio.sleep(0.05)
        brokers = [kernel.metadata.brokers[b] for b in sorted(kernel.metadata.brokers)]

        async def ask(broker: BrokerInfo) -> list[tuple[int, int, int]] | str:
            try:
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    response = await kernel.send(broker.id, API_VERSIONS, {})
            except TimeoutError:
                return "org.apache.kafka.common.errors.TimeoutException: Failed to get api versions"
            except ConnectionError:
                return "org.apache.kafka.common.errors.DisconnectException"
            if response.error_code:
                return java_exception(response.error_code)
            return [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]

        answers = await asyncio.gather(*(ask(b) for b in brokers))
        return list(zip(brokers, answers, strict=True))
    finally:
        await kernel.close()


def run(args: argparse.Namespace) -> int:
    if not args.bootstrap_server:
        print('Missing required argument "[bootstrap-server]"', file=sys.stderr)
        return 1
    try:
        found = asyncio.run(broker_api_versions(args.bootstrap_server, args.timeout, args.command_config))
    except TimeoutError as exc:
        print(f"org.apache.kafka.common.errors.TimeoutException: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad bootstrap list
        print(f"org.apache.kafka.common.config.ConfigException: {exc}", file=sys.stderr)
        return 1
    for broker, answer in found:
        if isinstance(answer, str):
            sys.stdout.write(f"{format_node(broker)} -> ERROR: {answer}\n")
        else:
            sys.stdout.write(f"{format_node(broker)} -> {format_api_versions(answer)}\n")
    sys.stdout.flush()
    return 0
