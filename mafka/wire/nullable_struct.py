"""A struct-typed field that Kafka's schema marks nullable (KIP-893).

Kafka 3.5+ schemas may give a struct field ``nullableVersions`` (the
Assignment of ConsumerGroupHeartbeat and ShareGroupHeartbeat responses).  On
the wire such a field is one signed byte before the struct, as Kafka's
``MessageDataGenerator`` writes it: ``-1`` for null (and nothing follows),
``1`` and then the struct.  A reader takes any negative byte as null and any
other as present, as Kafka's generated ``read`` does.

Like the leaves of :mod:`mafka.wire.primitives`, the construct compiles, and a
short read surfaces as :class:`~mafka.wire.errors.ProtocolError` naming the
field.
"""

from __future__ import annotations

import io as _io
from typing import Any

from construct import Construct

from .primitives import read_exact

__all__ = ["NullableStruct", "read_presence", "write_presence"]

_MODULE_IMPORT = "import mafka.wire.nullable_struct as _kn"
_NULL = b"\xff"
_PRESENT = b"\x01"


def read_presence(io: _io.BytesIO, what: str) -> bool:
    """Reads the marker byte: False for null (any negative value), True for a struct that follows."""
    return read_exact(io, 1, what)[0] < 0x80


def write_presence(io: _io.BytesIO, obj: Any) -> bool:
    """Writes the marker byte for *obj* (None → -1, else 1); True when the struct must follow."""
    if obj is None:
        io.write(_NULL)
        return False
    io.write(_PRESENT)
    return True


class NullableStruct(Construct):  # type: ignore[misc]  # construct ships no type information
    """*subcon* (a struct) behind Kafka's one-byte null marker; parses to None or the struct.

    Args:
        subcon: the struct construct at this version.
        what: dotted field path for error messages.
    """

    min_size = 1

    def __init__(self, subcon: Construct, what: str) -> None:
        super().__init__()
        self.subcon = subcon
        self.what = what
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        if not read_presence(stream, self.what):
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        if write_presence(stream, obj):
            self.subcon._build(obj, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"parse_nullable_struct_{code.allocateId()}"
        code.append(
            f"""
            def {fname}(io, this):
                if not _kn.read_presence(io, {self.what!r}):
                    return None
                return {self.subcon._compileparse(code)}
            """
        )
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"build_nullable_struct_{code.allocateId()}"
        code.append(
            f"""
            def {fname}(obj, io, this):
                if _kn.write_presence(io, obj):
                    {self.subcon._compilebuild(code)}
                return obj
            """
        )
        return f"{fname}(obj, io, this)"
