"""mafka.coordination.znodes: Kafka 2.8's znode paths and exact JSON bytes.

Expected bytes come from three places:

* the reference (``zk-controller-replication.md`` §1) where its example is in
  Kafka's real key order (``/controller``, producer-id block, notifications);
* Kafka 2.8.2's own tests (``KafkaZkClientTest``, ``ReassignPartitionsZNodeTest``);
* ``zkCli get`` dumps of real Kafka (Scala 2.13 builds) clusters, which show the
  hash-map key order Kafka really writes (the reference lists some keys in
  insertion order; those examples are checked to *decode* to the same value).
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mafka.coordination import znodes as zn
from mafka.coordination.znodes import (
    PERSISTENT_ZK_PATHS,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationZNode,
    LeaderIsrAndControllerEpoch,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ReassignPartitionsZNode,
    TopicAssignment,
    encode_json,
    encoding,
    new_cluster_id,
    new_topic_id,
    sequence_number,
    validate_base64_uuid,
)
from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint

# --------------------------------------------------------------------------- paths


def test_paths() -> None:
    assert zn.broker_path(3) == "/brokers/ids/3"
    assert zn.topic_path("t") == "/brokers/topics/t"
    assert zn.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert DeleteTopicsZNode.path("t") == "/admin/delete_topics/t"
    assert ConfigEntityZNode.topic_path("t") == "/config/topics/t"
    assert ConfigEntityZNode.broker_path(1) == "/config/brokers/1"
    assert ConfigEntityZNode.broker_path(None) == "/config/brokers/<default>"
    assert IsrChangeNotificationZNode.CREATE_PATH == "/isr_change_notification/isr_change_"
    assert ConfigChangeNotificationZNode.CREATE_PATH == "/config/changes/config_change_"
    assert (
        LogDirEventNotificationZNode.path("0000000001")
        == "/log_dir_event_notification/log_dir_event_0000000001"
    )
    assert sequence_number("isr_change_0000000042", "isr_change_") == "0000000042"
    with pytest.raises(ValueError):
        sequence_number("other_1", "isr_change_")


def test_persistent_paths_are_kafkas() -> None:
    assert PERSISTENT_ZK_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )


# --------------------------------------------------------------------------- JSON writer


def test_encode_json_is_jacksons_compact_form() -> None:
    assert encode_json({"a": [1, -2, True, None], "b": {}}) == b'{"a":[1,-2,true,null],"b":{}}'
    # Jackson: short escapes for \b \t \n \f \r, \u00XX (upper-case hex) for other controls;
    # "/" and non-ASCII are written as they are (UTF-8).
    assert encode_json('q"b\\\n\t\x01\x1f/é') == '"q\\"b\\\\\\n\\t\\u0001\\u001F/é"'.encode()
    with pytest.raises(TypeError):
        encode_json(1.5)


@given(st.text())
def test_encode_json_strings_parse_back(text: str) -> None:
    try:
        data = encode_json(text)
    except UnicodeEncodeError:  # lone surrogates
        return
    assert json.loads(data) == text


# --------------------------------------------------------------------------- /controller, /controller_epoch


def test_controller_exact_bytes_from_reference() -> None:
    data = b'{"version":1,"brokerid":2,"timestamp":"1650000000000"}'
    assert ControllerZNode(2, 1650000000000).encode() == data
    assert ControllerZNode.decode(data) == ControllerZNode(2, 1650000000000)


def test_controller_decodes_kraft_era_v2() -> None:
    data = b'{"version":2,"brokerid":0,"timestamp":"1710691902625","kraftControllerEpoch":-1}'
    assert ControllerZNode.decode(data) == ControllerZNode(0, 1710691902625)
    assert ControllerZNode.decode(b'{"version":1,"brokerid":4}') == ControllerZNode(4, -1)


@pytest.mark.parametrize(
    "data", [b"", b"nope", b"[]", b'{"version":1}', b'{"brokerid":"2"}', b"\xff"]
)
def test_controller_garbage(data: bytes) -> None:
    with pytest.raises(ValueError, match="/controller"):
        ControllerZNode.decode(data)


def test_controller_epoch_is_plain_text() -> None:
    assert ControllerEpochZNode.encode(5) == b"5"
    assert ControllerEpochZNode.encode(ControllerEpochZNode.INITIAL_EPOCH) == b"0"
    assert ControllerEpochZNode.decode(b"17") == 17
    for bad in (b"", b"x", b"1.5", b'{"epoch":1}'):
        with pytest.raises(ValueError):
            ControllerEpochZNode.decode(bad)


@given(st.integers(0, 2**31 - 1), st.integers(0, 2**62))
def test_controller_round_trip(broker_id: int, ts: int) -> None:
    node = ControllerZNode(broker_id, ts)
    assert ControllerZNode.decode(node.encode()) == node


# --------------------------------------------------------------------------- /brokers/ids/N

# Real `get /brokers/ids/N` output of Kafka clusters (Scala 2.13 builds).
KAFKA_V4 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],'
    b'"jmx_port":-1,"port":9092,"host":"localhost","version":4,"timestamp":"1620904358029"}'
)
KAFKA_V5 = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","PLAINTEXT_HOST":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://kafka:9092","PLAINTEXT_HOST://localhost:29092"],"jmx_port":-1,"port":9092,'
    b'"host":"kafka","version":5,"timestamp":"1736198272985"}'
)
STRIMZI_V5 = (
    b'{"features":{},"listener_security_protocol_map":{"CONTROLPLANE-9090":"SSL","REPLICATION-9091":"SSL",'
    b'"PLAIN-9092":"PLAINTEXT","TLS-9093":"SSL"},"endpoints":['
    b'"CONTROLPLANE-9090://my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc:9090",'
    b'"REPLICATION-9091://my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc:9091",'
    b'"PLAIN-9092://my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc:9092",'
    b'"TLS-9093://my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc:9093"],"jmx_port":-1,"port":9092,'
    b'"host":"my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc","version":5,"timestamp":"1710691902130"}'
)


def test_broker_v4_exact_bytes() -> None:
    reg = BrokerRegistration(
        0, {"PLAINTEXT": ("PLAINTEXT", "localhost", 9092)}, timestamp=1620904358029, version=4
    )
    assert reg.encode() == KAFKA_V4
    assert BrokerRegistration.decode(0, KAFKA_V4) == reg


def test_broker_v5_exact_bytes() -> None:
    reg = BrokerRegistration(
        1,
        {
            "PLAINTEXT": ("PLAINTEXT", "kafka", 9092),
            "PLAINTEXT_HOST": ("PLAINTEXT", "localhost", 29092),
        },
        timestamp=1736198272985,
    )
    assert reg.encode() == KAFKA_V5
    assert BrokerRegistration.decode(1, KAFKA_V5) == reg
    assert (reg.host, reg.port) == ("kafka", 9092)


def test_broker_v5_many_listeners_exact_bytes() -> None:
    host = "my-cluster-kafka-0.my-cluster-kafka-brokers.kafka.svc"
    reg = BrokerRegistration(
        0,
        {
            "CONTROLPLANE-9090": ("SSL", host, 9090),
            "REPLICATION-9091": ("SSL", host, 9091),
            "PLAIN-9092": ("PLAINTEXT", host, 9092),
            "TLS-9093": ("SSL", host, 9093),
        },
        timestamp=1710691902130,
    )
    assert reg.encode() == STRIMZI_V5
    assert BrokerRegistration.decode(0, STRIMZI_V5) == reg
    # host/port are the first PLAINTEXT endpoint's, not the first endpoint's
    assert reg.plaintext_endpoint == Endpoint("PLAIN-9092", "PLAINTEXT", host, 9092)


def test_broker_key_order_with_rack_and_features() -> None:
    reg = BrokerRegistration(
        7,
        {"SSL": ("SSL", "h", 9093)},
        rack="r1",
        jmx_port=9999,
        timestamp=5,
        features={"f": (1, 3)},
    )
    assert reg.encode() == (
        b'{"features":{"f":{"min_version":1,"max_version":3}},"listener_security_protocol_map":{"SSL":"SSL"},'
        b'"endpoints":["SSL://h:9093"],"rack":"r1","jmx_port":9999,"port":-1,"host":null,"version":5,'
        b'"timestamp":"5"}'
    )


def test_broker_reference_example_decodes_to_the_same_registration() -> None:
    # §1's example lists the keys in insertion order; Kafka writes them in hash order.
    reference = (
        b'{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1650000000000",'
        b'"endpoints":["PLAINTEXT://h:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"rack":"r1"}'
    )
    reg = BrokerRegistration.decode(2, reference)
    assert reg == BrokerRegistration(
        2, {"PLAINTEXT": ("PLAINTEXT", "h", 9092)}, rack="r1", timestamp=1650000000000, version=4
    )
    assert json.loads(reg.encode()) == json.loads(reference)
    assert reg.encode() == (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],'
        b'"rack":"r1","jmx_port":-1,"port":9092,"host":"h","version":4,"timestamp":"1650000000000"}'
    )


def test_broker_old_versions_decode() -> None:
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    assert BrokerRegistration.decode(1, v1) == BrokerRegistration(
        1,
        {"PLAINTEXT": ("PLAINTEXT", "localhost", 9092)},
        jmx_port=9999,
        timestamp=2233345666,
        version=1,
    )
    v2 = (
        b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}'
    )
    reg = BrokerRegistration.decode(1, v2)
    assert dict(reg.endpoints) == {
        "PLAINTEXT": Endpoint("PLAINTEXT", "PLAINTEXT", "host1", 9092),
        "SSL": Endpoint("SSL", "SSL", "host1", 9093),
    }
    v3 = v2.replace(b'"version":2', b'"version":3').replace(b"]}", b'],"rack":"dc1"}')
    assert BrokerRegistration.decode(1, v3).rack == "dc1"
    v5 = (
        b'{"version":5,"host":null,"port":-1,"jmx_port":-1,"timestamp":"1","endpoints":["CLIENT://[::1]:9092",'
        b'"REPLICATION://:9093"],"listener_security_protocol_map":{"CLIENT":"SASL_SSL","REPLICATION":"PLAINTEXT"},'
        b'"features":{"feature":{"min_version":1,"first_active_version":2,"max_version":3}}}'
    )
    reg = BrokerRegistration.decode(3, v5)
    assert dict(reg.endpoints) == {
        "CLIENT": Endpoint("CLIENT", "SASL_SSL", "::1", 9092),
        "REPLICATION": Endpoint("REPLICATION", "PLAINTEXT", None, 9093),
    }
    assert dict(reg.features) == {"feature": (1, 3)}
    assert (reg.host, reg.port) == (None, 9093)
    assert b'"endpoints":["CLIENT://[::1]:9092","REPLICATION://:9093"]' in reg.encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        b"[1]",
        b'{"version":0,"jmx_port":1}',
        b'{"jmx_port":1}',
        b'{"version":4,"jmx_port":-1,"endpoints":"PLAINTEXT://h:1"}',
        b'{"version":4,"jmx_port":-1,"endpoints":["nonsense"]}',
        b'{"version":2,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}',
        b'{"version":4,"jmx_port":-1,"endpoints":["A://h:1"],"listener_security_protocol_map":{"B":"SSL"}}',
        b'{"version":4,"jmx_port":-1,"endpoints":["A://h:1"],"listener_security_protocol_map":{"A":"TLS"}}',
        b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":1}}}',
    ],
)
def test_broker_garbage(data: bytes) -> None:
    with pytest.raises(ValueError, match="/brokers/ids/9"):
        BrokerRegistration.decode(9, data)


def test_broker_registration_validates_and_is_hashable() -> None:
    with pytest.raises(ValueError):
        BrokerRegistration(1, {"X": ("TLS", "h", 1)})
    with pytest.raises(ValueError):
        BrokerRegistration(1, {"X": ("SSL", "h", 1)}, version=1).encode()
    a = BrokerRegistration(1, {"A": ("SSL", "h", 1), "B": ("SSL", "h", 2)})
    b = BrokerRegistration(1, {"B": ("SSL", "h", 2), "A": ("SSL", "h", 1)})
    assert a != b  # endpoint order is part of the bytes
    assert {a, b, a} == {a, b}
    with pytest.raises(TypeError):
        a.endpoints["C"] = Endpoint("C", "SSL", "h", 3)  # type: ignore[index]


_listener = st.from_regex(r"[A-Z][A-Z0-9_-]{0,11}", fullmatch=True)
_host = st.one_of(
    st.none(),
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}", fullmatch=True),
    st.sampled_from(["::1", "fe80::1%eth0", "10.0.0.1"]),
)
_endpoint = st.tuples(st.sampled_from(SECURITY_PROTOCOLS), _host, st.integers(-1, 65535))


@given(
    broker_id=st.integers(0, 2**31 - 1),
    endpoints=st.dictionaries(_listener, _endpoint, max_size=6),
    rack=st.one_of(st.none(), st.text(max_size=10)),
    jmx_port=st.integers(-1, 65535),
    timestamp=st.integers(0, 2**62),
    features=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.tuples(st.integers(0, 99), st.integers(0, 99)),
        max_size=4,
    ),
    version=st.sampled_from([4, 5]),
)
def test_broker_round_trip(
    broker_id: int,
    endpoints: dict[str, tuple[str, str | None, int]],
    rack: str | None,
    jmx_port: int,
    timestamp: int,
    features: dict[str, tuple[int, int]],
    version: int,
) -> None:
    reg = BrokerRegistration(
        broker_id, endpoints, rack, jmx_port, timestamp, features if version == 5 else {}, version
    )
    try:
        data = reg.encode()
    except UnicodeEncodeError:
        return
    assert BrokerRegistration.decode(broker_id, data) == reg
    parsed = json.loads(data)
    assert parsed["endpoints"] == [ep.connection_string for ep in reg.endpoints.values()]
    assert (parsed["host"], parsed["port"]) == (reg.host, reg.port)


# --------------------------------------------------------------------------- /brokers/topics/T


def test_topic_v3_exact_bytes_from_a_real_cluster() -> None:
    data = (
        b'{"partitions":{"0":[0],"1":[0]},"topic_id":"WV18z8nWQ8yekl_6282UEQ","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}'
    )
    ta = TopicAssignment({0: [0], 1: [0]}, topic_id="WV18z8nWQ8yekl_6282UEQ")
    assert ta.encode() == data
    assert TopicAssignment.decode(data, "premier-topic") == ta


def test_topic_without_id_is_still_version_3() -> None:
    ta = TopicAssignment({0: [1, 2]}, adding_replicas={0: [3]}, removing_replicas={0: []})
    assert (
        ta.encode()
        == b'{"partitions":{"0":[1,2]},"adding_replicas":{"0":[3]},"removing_replicas":{},"version":3}'
    )
    assert ta.is_being_reassigned and not TopicAssignment({0: [1]}).is_being_reassigned


def test_topic_partition_map_order_is_scala_hash_order() -> None:
    # mutable.HashMap: 16 buckets until the 12th entry, then 32, 64, … ("10" lands in bucket 15).
    eleven = TopicAssignment({p: [1] for p in range(11)}).encode()
    assert eleven.startswith(
        b'{"partitions":{"0":[1],"1":[1],"2":[1],"3":[1],"4":[1],"5":[1],"6":[1],'
        b'"7":[1],"8":[1],"9":[1],"10":[1]}'
    )
    thirty = json.loads(
        TopicAssignment({p: [1] for p in range(30)}).encode(), object_pairs_hook=list
    )
    keys = [k for k, _ in thirty[0][1]]
    assert keys[:3] == ["22", "23", "24"] and sorted(keys, key=int) == [str(p) for p in range(30)]


def test_topic_old_versions_decode() -> None:
    assert TopicAssignment.decode(b'{"version":1,"partitions":{"0":[1,2,3]}}') == TopicAssignment(
        {0: [1, 2, 3]}
    )
    v2 = b'{"version":2,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{"0":[4],"7":[9]},"removing_replicas":{"0":[1]}}'
    ta = TopicAssignment.decode(v2)
    assert dict(ta.partitions) == {0: (1, 2), 1: (2, 3)}
    assert dict(ta.adding_replicas) == {0: (4,)}  # only for listed partitions, as Kafka
    assert dict(ta.removing_replicas) == {0: (1,)}
    assert ta.topic_id is None
    assert TopicAssignment.decode(b'{"version":3}') == TopicAssignment({})


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version":1,"partitions":{"x":[1]}}',
        b'{"version":1,"partitions":{"0":1}}',
        b'{"version":1,"partitions":{"0":["1"]}}',
        b'{"version":1,"partitions":[]}',
        b'{"version":3,"partitions":{},"topic_id":"short"}',
    ],
)
def test_topic_garbage(data: bytes) -> None:
    with pytest.raises(ValueError, match="/brokers/topics/t"):
        TopicAssignment.decode(data, "t")


_replicas = st.lists(st.integers(0, 2000), max_size=5)


@given(
    partitions=st.dictionaries(st.integers(0, 300), _replicas, max_size=40),
    data=st.data(),
    with_id=st.booleans(),
)
def test_topic_round_trip(
    partitions: dict[int, list[int]], data: st.DataObject, with_id: bool
) -> None:
    keys = sorted(partitions)
    adding = data.draw(st.dictionaries(st.sampled_from(keys), _replicas)) if keys else {}
    removing = data.draw(st.dictionaries(st.sampled_from(keys), _replicas)) if keys else {}
    ta = TopicAssignment(partitions, adding, removing, new_topic_id() if with_id else None)
    assert TopicAssignment.decode(ta.encode()) == ta
    assert hash(TopicAssignment.decode(ta.encode())) == hash(ta)


# --------------------------------------------------------------------------- partition state


def test_partition_state_exact_bytes() -> None:
    # A 5-key Scala Map is a hash trie: Kafka's real order (cf. countless `get …/state` dumps).
    state = LeaderIsrAndControllerEpoch(leader=1, leader_epoch=0, isr=[1, 2, 3], controller_epoch=1)
    data = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
    assert state.encode() == data
    assert LeaderIsrAndControllerEpoch.decode(data, zk_version=4) == state
    assert LeaderIsrAndControllerEpoch.decode(data, zk_version=4).zk_version == 4


def test_partition_state_reference_example_decodes() -> None:
    reference = b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,2,3]}'
    assert LeaderIsrAndControllerEpoch.decode(reference) == LeaderIsrAndControllerEpoch(
        1, 0, (1, 2, 3), 1
    )


def test_partition_state_zk_version_is_outside_equality() -> None:
    a = LeaderIsrAndControllerEpoch(1, 2, (1,), 3, zk_version=5)
    assert a == a.with_zk_version(9) and hash(a) == hash(a.with_zk_version(9))
    assert b"zk" not in a.encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b'{"leader":1,"leader_epoch":0,"controller_epoch":1}',
        b'{"leader":"1","leader_epoch":0,"controller_epoch":1,"isr":[]}',
    ],
)
def test_partition_state_garbage(data: bytes) -> None:
    with pytest.raises(ValueError):
        LeaderIsrAndControllerEpoch.decode(data)


@given(
    st.integers(-2, 2**31 - 1),
    st.integers(-2, 2**31 - 1),
    st.lists(st.integers(0, 2**31 - 1), max_size=6),
    st.integers(0, 2**31 - 1),
)
def test_partition_state_round_trip(
    leader: int, epoch: int, isr: list[int], controller_epoch: int
) -> None:
    state = LeaderIsrAndControllerEpoch(leader, epoch, isr, controller_epoch)
    assert LeaderIsrAndControllerEpoch.decode(state.encode()) == state


# --------------------------------------------------------------------------- configs


def test_config_exact_bytes_java_properties_order() -> None:
    # java.util.Properties is a ConcurrentHashMap on Java 9+: hash order, not insertion order.
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
        "compression.type": "producer",
    }
    assert ConfigEntityZNode.encode(config) == (
        b'{"version":1,"config":{"compression.type":"producer","cleanup.policy":"compact","segment.bytes":"104857600"}}'
    )
    # a real `get /config/topics/customer-delete`
    assert ConfigEntityZNode.encode(
        {"max.message.bytes": "10000", "cleanup.policy": "compact"}
    ) == (b'{"version":1,"config":{"cleanup.policy":"compact","max.message.bytes":"10000"}}')
    assert ConfigEntityZNode.encode({}) == b'{"version":1,"config":{}}'


def test_config_decode_tolerance() -> None:
    assert ConfigEntityZNode.decode(b"") == {}
    assert ConfigEntityZNode.decode(b'{"version":1}') == {}
    assert ConfigEntityZNode.decode(b'{"version":1,"config":{"a":"1","b":2,"c":true}}') == {
        "a": "1",
        "b": "2",
        "c": "true",
    }
    for bad in (b"nope", b'{"config":[]}', b'{"config":{"a":null}}', b'{"config":{"a":[1]}}'):
        with pytest.raises(ValueError):
            ConfigEntityZNode.decode(bad)


@given(st.dictionaries(st.text(max_size=30), st.text(max_size=30), max_size=40))
def test_config_round_trip(config: dict[str, str]) -> None:
    try:
        data = ConfigEntityZNode.encode(config)
    except UnicodeEncodeError:
        return
    assert ConfigEntityZNode.decode(data) == config


def test_config_change_notification() -> None:
    assert (
        ConfigChangeNotificationZNode.encode("topics/topic1")
        == b'{"version":2,"entity_path":"topics/topic1"}'
    )
    assert (
        ConfigChangeNotificationZNode.decode(b'{"version":2,"entity_path":"topics/topic1"}')
        == "topics/topic1"
    )
    assert (
        ConfigChangeNotificationZNode.decode(
            b'{"version":1,"entity_type":"topics","entity_name":"t"}'
        )
        == "topics/t"
    )
    with pytest.raises(ValueError):
        ConfigChangeNotificationZNode.decode(b'{"version":3,"entity_path":"x"}')


# --------------------------------------------------------------------------- notifications and admin nodes


def test_isr_change_notification_exact_bytes_from_kafka_test() -> None:
    data = b'{"version":1,"partitions":[{"topic":"topic-a","partition":0},{"topic":"topic-b","partition":0}]}'
    assert IsrChangeNotificationZNode.encode([("topic-a", 0), ("topic-b", 0)]) == data
    assert IsrChangeNotificationZNode.decode(data) == (("topic-a", 0), ("topic-b", 0))
    with pytest.raises(ValueError):
        IsrChangeNotificationZNode.decode(b'{"version":1}')
    with pytest.raises(ValueError):
        IsrChangeNotificationZNode.decode(b'{"version":1,"partitions":[{"topic":"t"}]}')


def test_log_dir_event_exact_bytes_from_kafka_test() -> None:
    assert LogDirEventNotificationZNode.encode(3) == b'{"version":1,"broker":3,"event":1}'
    assert LogDirEventNotificationZNode.decode(b'{"version":1,"broker":3,"event":1}') == 3


def test_reassign_and_preferred_exact_bytes() -> None:
    data = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
    assert ReassignPartitionsZNode.encode({("foo", 0): [1, 2]}) == data
    assert ReassignPartitionsZNode.decode(data) == {("foo", 0): (1, 2)}
    pref = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert PreferredReplicaElectionZNode.encode([("t", 0)]) == pref
    assert PreferredReplicaElectionZNode.decode(pref) == (("t", 0),)
    with pytest.raises(ValueError):
        ReassignPartitionsZNode.decode(
            b'{"version":1,"partitions":[{"topic":"foo","partition":0}]}'
        )


# --------------------------------------------------------------------------- producer ids, cluster id, feature


def test_producer_id_block_exact_bytes_from_reference() -> None:
    data = b'{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
    block = ProducerIdBlock(2, 1000, 1999)
    assert block.encode() == data
    assert ProducerIdBlock.decode(data) == block
    assert (
        ProducerIdBlock.decode(b'{"version":1,"broker":2,"block_start":1000,"block_end":1999}')
        == block
    )
    assert ProducerIdBlock.first(5) == ProducerIdBlock(5, 0, 999)
    assert block.next_block(3) == ProducerIdBlock(3, 2000, 2999) and block.size == 1000
    with pytest.raises(OverflowError):
        ProducerIdBlock(1, 0, ProducerIdBlock.MAX_ID - 10).next_block(1)
    for bad in (b"", b"{}", b'{"broker":1,"block_start":"x","block_end":"1"}'):
        with pytest.raises(ValueError):
            ProducerIdBlock.decode(bad)


def test_cluster_id() -> None:
    assert (
        ClusterIdZNode.encode("4pPaM0PaTYCcMYkMi2sHHQ")
        == b'{"version":"1","id":"4pPaM0PaTYCcMYkMi2sHHQ"}'
    )
    assert (
        ClusterIdZNode.decode(b'{"version":"1","id":"4pPaM0PaTYCcMYkMi2sHHQ"}')
        == "4pPaM0PaTYCcMYkMi2sHHQ"
    )
    with pytest.raises(ValueError):
        ClusterIdZNode.decode(b'{"version":"1"}')
    ids = {new_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    for cid in ids:
        assert validate_base64_uuid(cid) == cid and len(cid) == 22 and "=" not in cid
    for bad in ("", "x" * 21, "+" * 22, "AAAAAAAAAAAAAAAAAAAAAB"):
        with pytest.raises(ValueError):
            validate_base64_uuid(bad)


def test_feature_znode() -> None:
    assert FeatureZNode(FeatureZNode.DISABLED).encode() == b'{"features":{},"version":1,"status":0}'
    node = FeatureZNode(FeatureZNode.ENABLED, {"f": (1, 2)})
    data = node.encode()
    assert (
        data
        == b'{"features":{"f":{"min_version_level":1,"max_version_level":2}},"version":1,"status":1}'
    )
    assert FeatureZNode.decode(data) == node
    reference = (
        b'{"version":1,"status":1,"features":{"f":{"min_version_level":1,"max_version_level":2}}}'
    )
    assert FeatureZNode.decode(reference) == node
    for bad in (
        b'{"version":0,"status":1,"features":{}}',
        b'{"version":1,"features":{}}',
        b'{"version":1,"status":1}',
        b'{"version":1,"status":7,"features":{}}',
    ):
        with pytest.raises(ValueError):
            FeatureZNode.decode(bad)


# --------------------------------------------------------------------------- the hash-order models


def test_java_properties_order_matches_the_jdk() -> None:
    # Expected orders printed by java.util.Properties on OpenJDK 17 (put in the order given,
    # then iterate entrySet()).
    keys = (
        "retention.ms,cleanup.policy,segment.bytes,compression.type,max.message.bytes,min.insync.replicas,"
        "segment.ms,flush.messages,flush.ms,index.interval.bytes,delete.retention.ms,file.delete.delay.ms,"
        "unclean.leader.election.enable"
    ).split(",")  # 13 keys: the 16-slot table resizes to 32 at the 12th (tail runs move first)
    assert ",".join(encoding._java_properties((k, "v") for k in keys)) == (
        "compression.type,file.delete.delay.ms,max.message.bytes,min.insync.replicas,index.interval.bytes,"
        "unclean.leader.election.enable,delete.retention.ms,cleanup.policy,flush.ms,retention.ms,"
        "segment.bytes,segment.ms,flush.messages"
    )
    # "Aa" and "BB" hash alike: 8+ keys in one bin presize the table instead of treeifying
    colliding = [
        a + b + c + d
        for a in ("Aa", "BB")
        for b in ("Aa", "BB")
        for c in ("Aa", "BB")
        for d in ("Aa", "BB")
    ]
    assert ",".join(encoding._java_properties((k, 1) for k in colliding)) == (
        "BBBBBBBB,BBBBBBAa,BBBBAaBB,BBBBAaAa,BBAaBBBB,BBAaBBAa,AaAaAaAa,AaAaAaBB,AaAaBBAa,AaAaBBBB,"
        "AaBBAaAa,AaBBAaBB,AaBBBBAa,AaBBBBBB,BBAaAaAa,BBAaAaBB"
    )
    # 64 keys with one hashCode: the bin becomes a tree once the table has 64 slots (after the
    # 10th key); trees take new keys at their head, so the JDK prints the later 54 reversed.
    same_hash = [
        a + b + c + d + e + f
        for a in ("Aa", "BB")
        for b in ("Aa", "BB")
        for c in ("Aa", "BB")
        for d in ("Aa", "BB")
        for e in ("Aa", "BB")
        for f in ("Aa", "BB")
    ]
    assert list(encoding._java_properties((k, 1) for k in same_hash)) == same_hash[:9:-1] + same_hash[:10]
    chained = "s6,s10,s21,s32,s43,s54,s65,s76,s87,s98,s108,s119".split(",")  # all in bin 3 of 16
    assert (
        ",".join(encoding._java_properties((k, 1) for k in chained))
        == "s32,s76,s108,s6,s43,s87,s54,s10,s98,s21,s65,s119"
    )


def test_java_hash_map_order_matches_the_jdk() -> None:
    # java.util.HashMap on OpenJDK 17, same keys as above
    keys = (
        "retention.ms,cleanup.policy,segment.bytes,compression.type,max.message.bytes,min.insync.replicas,"
        "segment.ms,flush.messages,flush.ms,index.interval.bytes,delete.retention.ms,file.delete.delay.ms,"
        "unclean.leader.election.enable"
    ).split(",")
    assert ",".join(encoding._java_hash_map((k, "v") for k in keys)) == (
        "compression.type,file.delete.delay.ms,max.message.bytes,min.insync.replicas,index.interval.bytes,"
        "unclean.leader.election.enable,delete.retention.ms,cleanup.policy,flush.ms,retention.ms,"
        "segment.bytes,segment.ms,flush.messages"
    )


@given(st.lists(st.text(max_size=6), max_size=60, unique=True))
def test_map_models_keep_every_key(keys: list[str]) -> None:
    pairs = [(k, i) for i, k in enumerate(keys)]
    for model in (
        encoding._java_properties,
        encoding._java_hash_map,
        encoding._scala_immutable_map,
        encoding._scala_mutable_map,
    ):
        out = model(pairs)
        assert sorted(out) == sorted(keys)
        assert all(out[k] == i for k, i in pairs)


def test_small_scala_maps_keep_insertion_order() -> None:
    assert list(encoding._scala_immutable_map([("z", 1), ("a", 2), ("m", 3), ("b", 4)])) == [
        "z",
        "a",
        "m",
        "b",
    ]
    assert list(encoding._scala_immutable_map([("a", 1), ("a", 2)]).items()) == [("a", 2)]


def test_partition_state_encoding_is_the_generic_champ_map_encoding() -> None:
    # LeaderIsrAndControllerEpoch.encode writes its JSON directly, in the key order computed once;
    # it must stay byte-for-byte what the generic writer makes of Kafka's 5-entry map.
    rng = random.Random(5642)
    for _ in range(500):
        state = LeaderIsrAndControllerEpoch(
            rng.choice((-2, -1, 0, 7, 2**31 - 1)),
            rng.randrange(0, 2**31),
            tuple(rng.sample(range(1000), rng.randrange(0, 6))),
            rng.randrange(0, 2**31),
        )
        generic = encoding._scala_immutable_map(
            [
                ("version", 1),
                ("leader", state.leader),
                ("leader_epoch", state.leader_epoch),
                ("controller_epoch", state.controller_epoch),
                ("isr", list(state.isr)),
            ]
        )
        assert state.encode() == encode_json(generic)
        assert LeaderIsrAndControllerEpoch.decode(state.encode()) == state
