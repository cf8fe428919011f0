"""Kafka's own schema files of the six consumer group record types, verbatim (Apache License 2.0).

Copied from apache/kafka ``group-coordinator/src/main/resources/common/message/`` (trunk of
October 2024, the Kafka 4.0 line).  ``test_records.py`` loads them into kafka-python's
generic JSON-schema codec, an encoder written independently of ours, to cross-check bytes.
"""
