"""Kafka's own schema files of the six share group record types, verbatim (Apache License 2.0).

Copied from confluentinc/kafka branch ``4.4`` (commit 8d3916cfe15f), directory
``group-coordinator/src/main/resources/common/message/``.  ``test_records.py`` loads them into
kafka-python's generic JSON-schema codec, an encoder written independently of ours, to
cross-check bytes.
"""
