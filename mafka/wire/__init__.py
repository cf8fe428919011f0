"""Kafka's wire protocol: framing, headers, every API Mafka speaks, and record batches.

Pure Python, no I/O: bytes in, values out, and back.  Start with
:mod:`mafka.wire.codec` (requests and responses), :mod:`mafka.wire.framing`
(the sans-IO frame buffer), :mod:`mafka.wire.batch` (the broker's zero-copy
record-batch view) and :mod:`mafka.wire.records` (full record codec for
clients and tools).  Malformed input raises
:class:`mafka.wire.errors.ProtocolError` and nothing else.
"""
