"""Kafka's primitive wire types as construct leaves that compile.

Each leaf is a :class:`construct.Construct` whose ``_emitparse`` /
``_emitbuild`` emit a call into the plain functions of this module, so a
``Struct`` of them compiles (``.compile()``) into straight-line Python with
no per-field interpretation.  The functions own every safety check:

* every length and count is compared with the bytes that remain in the
  stream *before* anything is allocated (the CVE-2022-34917 class);
* unsigned varints longer than five bytes are refused, as Kafka refuses them;
* a null where the version does not allow one is refused;
* failures raise :class:`~mafka.wire.errors.ProtocolError` naming the field.

Short reads of fixed-size integers surface as ``struct.error``; the codec
boundary (:mod:`mafka.wire.codec`) converts any such escape into
``ProtocolError``, so callers only ever see that one type.

Building fills in defaults: a field missing from the dict (or ``None`` where
the version does not allow null) is written with its default, as Kafka's
generated message classes do.  A nullable field that is missing is written
as null.

Streams: decoding uses :class:`FrameReader`, a ``BytesIO`` that also holds a
memoryview of its data so that ``records`` fields come back as zero-copy
memoryview slices of the frame.  Any other ``BytesIO`` works too (records are
then copied).
"""

from __future__ import annotations

import io as _io
import struct
import sys
from collections.abc import Sequence
from typing import Any

from construct import Computed, Construct, Struct

from .errors import ProtocolError

__all__ = [
    "FrameReader",
    "Fixed",
    "Boolean",
    "String",
    "Bytes",
    "Records",
    "Uuid",
    "KArray",
    "TaggedFields",
    "FIXED_FORMATS",
]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

#: Kafka fixed-width type name → (struct format, size, default).
FIXED_FORMATS: dict[str, tuple[str, int, Any]] = {
    "int8": (">b", 1, 0),
    "int16": (">h", 2, 0),
    "uint16": (">H", 2, 0),
    "int32": (">i", 4, 0),
    "uint32": (">I", 4, 0),
    "int64": (">q", 8, 0),
    "float64": (">d", 8, 0.0),
}


class FrameReader(_io.BytesIO):
    """A BytesIO over one frame that knows its size and keeps a memoryview.

    Args:
        data: the frame's bytes (header and body, without the size prefix).
    """

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        if not isinstance(data, bytes):
            data = bytes(data)  # BytesIO shares a bytes object; anything else it would copy anyway
        super().__init__(data)
        self.view = memoryview(data)
        self.size = len(data)


class Body(dict[str, Any]):
    """A decoded struct: a plain dict whose keys also read as attributes."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __repr__(self) -> str:
        return f"Body({dict.__repr__(self)})"


class ChunkWriter:
    """A write-only stream that collects chunks and joins them once.

    Building into a BytesIO copies every large record set as the buffer
    grows; collecting references and joining at the end copies each byte
    once (and a future sendfile path can hand the chunks over unjoined).
    """

    __slots__ = ("chunks", "write")

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        self.write = self.chunks.append

    def getvalue(self) -> bytes:
        return b"".join(self.chunks)


# --------------------------------------------------------------------------
# Runtime functions called from compiled code.  Keep them small and flat:
# they run once per field of every request.


def remaining(io: _io.BytesIO) -> int:
    """Bytes left to read in *io*."""
    size = getattr(io, "size", None)
    if size is None:
        size = len(io.getvalue())
    return size - io.tell()


def read_exact(io: _io.BytesIO, n: int, what: str) -> bytes:
    data = io.read(n)
    if len(data) != n:
        raise ProtocolError(f"{what}: needs {n} bytes, {len(data)} remain")
    return data


def read_uvarint(io: _io.BytesIO, what: str) -> int:
    """Unsigned base-128 varint of at most five bytes (Kafka's readUnsignedVarint)."""
    value = 0
    shift = 0
    read = io.read
    while True:
        b = read(1)
        if not b:
            raise ProtocolError(f"{what}: truncated varint")
        byte = b[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
        if shift >= 35:
            raise ProtocolError(f"{what}: varint longer than 5 bytes")


def uvarint_bytes(value: int) -> bytes:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_length(io: _io.BytesIO, compact: bool, wide: bool, what: str) -> int:
    """A length or count prefix; -1 means null."""
    if compact:
        return read_uvarint(io, what) - 1
    n: int
    if wide:
        n = _I32.unpack(read_exact(io, 4, what))[0]
    else:
        n = _I16.unpack(read_exact(io, 2, what))[0]
    return n


def _write_length(io: _io.BytesIO, n: int, compact: bool, wide: bool) -> None:
    if compact:
        io.write(uvarint_bytes(n + 1))
    elif wide:
        io.write(_I32.pack(n))
    else:
        io.write(_I16.pack(n))


# Fast paths for non-flexible versions (int16 / int32 prefixes), flat on
# purpose: no nested calls on the per-field path.
_unpack_i16 = _I16.unpack
_unpack_i32 = _I32.unpack


def read_str16(io: _io.BytesIO, nullable: bool, what: str) -> str | None:
    """STRING / NULLABLE_STRING (int16 length)."""
    b = io.read(2)
    if len(b) != 2:
        raise ProtocolError(f"{what}: truncated string length")
    n = _unpack_i16(b)[0]
    if n < 0:
        if n == -1 and nullable:
            return None
        raise ProtocolError(f"{what}: invalid string length {n}")
    data = io.read(n)
    if len(data) != n:
        raise ProtocolError(f"{what}: needs {n} bytes, {len(data)} remain")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: invalid UTF-8 ({exc.reason})") from None


def read_bytes32(io: _io.BytesIO, nullable: bool, what: str) -> bytes | None:
    """BYTES / NULLABLE_BYTES (int32 length)."""
    b = io.read(4)
    if len(b) != 4:
        raise ProtocolError(f"{what}: truncated bytes length")
    n = _unpack_i32(b)[0]
    if n < 0:
        if n == -1 and nullable:
            return None
        raise ProtocolError(f"{what}: invalid bytes length {n}")
    data = io.read(n)
    if len(data) != n:
        raise ProtocolError(f"{what}: needs {n} bytes, {len(data)} remain")
    return data


def read_records32(io: _io.BytesIO, what: str) -> memoryview | bytes | None:
    """RECORDS (int32 length): a zero-copy slice of the frame from a FrameReader."""
    b = io.read(4)
    if len(b) != 4:
        raise ProtocolError(f"{what}: truncated records length")
    n = _unpack_i32(b)[0]
    if n < 0:
        if n == -1:
            return None
        raise ProtocolError(f"{what}: invalid records length {n}")
    if not isinstance(io, FrameReader):
        return read_exact(io, n, what)
    pos = io.tell()
    if n > io.size - pos:
        raise ProtocolError(f"{what}: needs {n} bytes, {io.size - pos} remain")
    io.seek(pos + n)
    return io.view[pos : pos + n]


def read_array32(io: _io.BytesIO, nullable: bool, min_size: int, what: str) -> int:
    """ARRAY count (int32), checked against the bytes remaining; -1 = null."""
    b = io.read(4)
    if len(b) != 4:
        raise ProtocolError(f"{what}: truncated array length")
    n: int = _unpack_i32(b)[0]
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise ProtocolError(f"{what}: invalid array length {n}")
    if n:
        left = remaining(io)
        if n * min_size > left:
            raise ProtocolError(f"{what}: {n} elements of at least {min_size} bytes exceed the {left} remaining")
    return n


def read_fixed(io: _io.BytesIO, fmt: struct.Struct, what: str) -> Any:
    return fmt.unpack(read_exact(io, fmt.size, what))[0]


def write_fixed(io: _io.BytesIO, obj: Any, fmt: struct.Struct, default: Any) -> Any:
    if obj is None:
        obj = default
    io.write(fmt.pack(obj))
    return obj


def read_bool(io: _io.BytesIO, what: str) -> bool:
    return read_exact(io, 1, what) != b"\x00"


def write_bool(io: _io.BytesIO, obj: Any, default: bool) -> Any:
    if obj is None:
        obj = default
    io.write(b"\x01" if obj else b"\x00")
    return obj


def read_string(io: _io.BytesIO, compact: bool, nullable: bool, what: str) -> str | None:
    n = _read_length(io, compact, False, what)
    if n < 0:
        if n == -1 and nullable:
            return None
        raise ProtocolError(f"{what}: invalid string length {n}")
    data = read_exact(io, n, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: invalid UTF-8 ({exc.reason})") from None


def write_string(
    io: _io.BytesIO, obj: Any, compact: bool, nullable: bool, default: Any
) -> Any:
    if obj is None:
        if nullable:
            _write_length(io, -1, compact, False)
            return None
        obj = default
    data = obj.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes exceeds 32767")
    _write_length(io, len(data), compact, False)
    io.write(data)
    return obj


def read_bytes(io: _io.BytesIO, compact: bool, nullable: bool, what: str) -> bytes | None:
    n = _read_length(io, compact, True, what)
    if n < 0:
        if n == -1 and nullable:
            return None
        raise ProtocolError(f"{what}: invalid bytes length {n}")
    return read_exact(io, n, what)


def read_records(io: _io.BytesIO, compact: bool, what: str) -> memoryview | bytes | None:
    """Opaque record set: a zero-copy slice of the frame when read from a FrameReader."""
    n = _read_length(io, compact, True, what)
    if n < 0:
        if n == -1:
            return None
        raise ProtocolError(f"{what}: invalid records length {n}")
    if not isinstance(io, FrameReader):
        return read_exact(io, n, what)
    pos = io.tell()
    if n > io.size - pos:
        raise ProtocolError(f"{what}: needs {n} bytes, {io.size - pos} remain")
    io.seek(pos + n)
    return io.view[pos : pos + n]


def write_bytes(io: _io.BytesIO, obj: Any, compact: bool, nullable: bool, default: Any) -> Any:
    if obj is None:
        if nullable:
            _write_length(io, -1, compact, True)
            return None
        obj = default
    _write_length(io, len(obj), compact, True)
    io.write(obj)
    return obj


def read_array_length(
    io: _io.BytesIO, compact: bool, nullable: bool, min_size: int, what: str
) -> int:
    """An array's element count, checked against the bytes that remain.

    Returns -1 for a null array (only where *nullable*).
    """
    n = _read_length(io, compact, True, what)
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise ProtocolError(f"{what}: invalid array length {n}")
    if n * min_size > remaining(io):
        raise ProtocolError(
            f"{what}: {n} elements of at least {min_size} bytes exceed the {remaining(io)} remaining"
        )
    return n


def write_array_length(
    io: _io.BytesIO, obj: Sequence[Any] | None, compact: bool, nullable: bool
) -> Sequence[Any] | None:
    """Writes the count prefix; returns the items to write (None for a null array)."""
    if obj is None:
        if nullable:
            _write_length(io, -1, compact, True)
            return None
        obj = ()
    _write_length(io, len(obj), compact, True)
    return obj


def read_tagged_fields(io: _io.BytesIO, what: str) -> dict[int, bytes]:
    """A tagged-field section kept raw: {tag: bytes}, tags strictly ascending."""
    count = read_uvarint(io, what)
    if count == 0:
        return {}
    if 2 * count > remaining(io):
        raise ProtocolError(f"{what}: {count} tagged fields exceed the bytes remaining")
    out: dict[int, bytes] = {}
    last = -1
    for _ in range(count):
        tag = read_uvarint(io, what)
        if tag <= last:
            raise ProtocolError(f"{what}: tag {tag} out of order or repeated")
        last = tag
        size = read_uvarint(io, what)
        out[tag] = read_exact(io, size, what)
    return out


def write_tagged_fields(io: _io.BytesIO, obj: Any) -> Any:
    if not obj:
        io.write(b"\x00")
        return {}
    io.write(uvarint_bytes(len(obj)))
    for tag in sorted(obj):
        data = obj[tag]
        io.write(uvarint_bytes(tag))
        io.write(uvarint_bytes(len(data)))
        io.write(data)
    return obj


# --------------------------------------------------------------------------
# Leaf constructs.  Each knows its dotted field path (for error messages),
# its minimum encoded size (for array-count checks) and its build default.

_MODULE_IMPORT = "import mafka.wire.primitives as _kp"


class _Leaf(Construct):  # type: ignore[misc]  # construct ships no type information
    """Base: parse/build delegate to the runtime functions above."""

    min_size = 0

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.flagbuildnone = True

    def _emitparse(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        return self._parse_expr()

    def _emitbuild(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        return self._build_expr()

    # Interpreted (uncompiled) use runs the very expressions compiled code
    # inlines, turned into functions once per leaf.
    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        fn = self.__dict__.get("_parse_fn")
        if fn is None:
            fn = self._parse_fn = _function("io", self._parse_expr())
        return fn(stream)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        fn = self.__dict__.get("_build_fn")
        if fn is None:
            fn = self._build_fn = _function("obj, io", self._build_expr())
        return fn(obj, stream)

    def _parse_expr(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _build_expr(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


def _function(params: str, expr: str) -> Any:
    """``lambda params: expr`` over this module, as compiled code would run it."""
    return eval(f"lambda {params}: {expr}", {"_kp": sys.modules[__name__]})  # noqa: S307


class Fixed(_Leaf):
    """A fixed-width integer or float (Kafka int8…int64, uint16, uint32, float64)."""

    def __init__(self, kind: str, what: str, default: Any = None) -> None:
        super().__init__(what)
        fmt, size, type_default = FIXED_FORMATS[kind]
        self.fmt = fmt
        self.min_size = size
        self.default = type_default if default is None else default

    def _parse_expr(self) -> str:
        return f"_kp.read_fixed(io, _kp.STRUCTS[{self.fmt!r}], {self.what!r})"

    def _build_expr(self) -> str:
        return f"_kp.write_fixed(io, obj, _kp.STRUCTS[{self.fmt!r}], {self.default!r})"

    def _emitparse(self, code: Any) -> str:
        # Inline the common case: one struct unpack of an exact read.
        code.append(_MODULE_IMPORT)
        name = "_kp_" + {">b": "i8", ">h": "i16", ">H": "u16", ">i": "i32", ">I": "u32", ">q": "i64", ">d": "f64"}[self.fmt]
        code.append(f"{name} = struct.Struct({self.fmt!r})")
        return f"{name}.unpack(io.read({self.min_size}))[0]"


STRUCTS = {fmt: struct.Struct(fmt) for fmt, _, _ in FIXED_FORMATS.values()}


class Boolean(_Leaf):
    min_size = 1

    def __init__(self, what: str, default: bool = False) -> None:
        super().__init__(what)
        self.default = bool(default)

    def _parse_expr(self) -> str:
        return f"_kp.read_bool(io, {self.what!r})"

    def _build_expr(self) -> str:
        return f"_kp.write_bool(io, obj, {self.default!r})"


class String(_Leaf):
    """STRING / NULLABLE_STRING / COMPACT_(NULLABLE_)STRING."""

    def __init__(self, what: str, *, compact: bool, nullable: bool, default: Any = "") -> None:
        super().__init__(what)
        self.compact = compact
        self.nullable = nullable
        self.default = "" if default is None else default
        self.min_size = 1 if compact else 2

    def _parse_expr(self) -> str:
        if not self.compact:
            return f"_kp.read_str16(io, {self.nullable}, {self.what!r})"
        return f"_kp.read_string(io, True, {self.nullable}, {self.what!r})"

    def _build_expr(self) -> str:
        return f"_kp.write_string(io, obj, {self.compact}, {self.nullable}, {self.default!r})"


class Bytes(_Leaf):
    """BYTES / NULLABLE_BYTES / COMPACT_(NULLABLE_)BYTES, read as ``bytes``."""

    def __init__(self, what: str, *, compact: bool, nullable: bool, default: Any = b"") -> None:
        super().__init__(what)
        self.compact = compact
        self.nullable = nullable
        self.default = b"" if default is None else default
        self.min_size = 1 if compact else 4

    def _parse_expr(self) -> str:
        if not self.compact:
            return f"_kp.read_bytes32(io, {self.nullable}, {self.what!r})"
        return f"_kp.read_bytes(io, True, {self.nullable}, {self.what!r})"

    def _build_expr(self) -> str:
        return f"_kp.write_bytes(io, obj, {self.compact}, {self.nullable}, {self.default!r})"


class Records(_Leaf):
    """RECORDS: an opaque, nullable record set, never decoded here."""

    def __init__(self, what: str, *, compact: bool) -> None:
        super().__init__(what)
        self.compact = compact
        self.min_size = 1 if compact else 4

    def _parse_expr(self) -> str:
        if not self.compact:
            return f"_kp.read_records32(io, {self.what!r})"
        return f"_kp.read_records(io, True, {self.what!r})"

    def _build_expr(self) -> str:
        return f"_kp.write_bytes(io, obj, {self.compact}, True, None)"


class Uuid(_Leaf):
    """UUID: 16 raw bytes (all zero = Kafka's ZERO_UUID)."""

    min_size = 16

    def __init__(self, what: str) -> None:
        super().__init__(what)

    def _parse_expr(self) -> str:
        return f"_kp.read_exact(io, 16, {self.what!r})"

    def _build_expr(self) -> str:
        return "_kp.write_uuid(io, obj)"


def write_uuid(io: _io.BytesIO, obj: Any) -> Any:
    if obj is None:
        obj = bytes(16)
    if len(obj) != 16:
        raise ValueError("uuid must be 16 bytes")
    io.write(obj)
    return obj


class TaggedFields(_Leaf):
    """The tagged-field section of a flexible struct, kept raw as {tag: bytes}.

    Mafka reads and writes no typed tagged field in the versions it speaks, so
    unknown tags are carried through unchanged and an absent section is
    written as a single zero byte — never default-valued tags (kcat breaks on
    those).
    """

    min_size = 1

    def _parse_expr(self) -> str:
        return f"_kp.read_tagged_fields(io, {self.what!r})"

    def _build_expr(self) -> str:
        return "_kp.write_tagged_fields(io, obj)"


class KArray(Construct):  # type: ignore[misc]  # construct ships no type information
    """ARRAY / COMPACT_ARRAY of *subcon*, its count checked before allocation.

    Args:
        subcon: the element construct.
        what: dotted field path for error messages.
        compact: uvarint N+1 count (flexible versions) instead of int32.
        nullable: whether -1 / 0 (compact) means null at this version.
        min_size: the smallest encoded element, used to refuse counts that
            cannot fit in the bytes that remain.
    """

    def __init__(self, subcon: Construct, what: str, *, compact: bool, nullable: bool, min_size: int) -> None:
        super().__init__()
        self.subcon = subcon
        self.what = what
        self.compact = compact
        self.nullable = nullable
        self.min_size = 1 if compact else 4
        self.elem_min = max(1, min_size)
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        n = read_array_length(stream, self.compact, self.nullable, self.elem_min, self.what)
        if n < 0:
            return None
        return [self.subcon._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        items = write_array_length(stream, obj, self.compact, self.nullable)
        if items is None:
            return None
        for item in items:
            self.subcon._build(item, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"parse_karray_{code.allocateId()}"
        if self.compact:
            count = f"_kp.read_array_length(io, True, {self.nullable}, {self.elem_min}, {self.what!r})"
        else:
            count = f"_kp.read_array32(io, {self.nullable}, {self.elem_min}, {self.what!r})"
        code.append(
            f"""
            def {fname}(io, this):
                n = {count}
                if n < 0:
                    return None
                return [{self.subcon._compileparse(code)} for _ in range(n)]
            """
        )
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"build_karray_{code.allocateId()}"
        code.append(
            f"""
            def {fname}(obj, io, this):
                items = _kp.write_array_length(io, obj, {self.compact}, {self.nullable})
                if items is None:
                    return None
                for obj in items:
                    {self.subcon._compilebuild(code)}
                return items
            """
        )
        return f"{fname}(obj, io, this)"


class KStruct(Struct):  # type: ignore[misc]  # construct ships no type information
    """A Kafka struct: fields in order, decoded into a :class:`Body`.

    Construct's own ``Struct`` builds a context container per struct so that
    fields may refer to each other; Kafka's layouts never do, so the compiled
    code here skips that work and just reads the fields in order.  Fields
    built with ``Computed`` (absent at this version) are parsed as their
    constant and not written.
    """

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        body = Body()
        for sc in self.subcons:
            body[sc.name] = sc._parsereport(stream, context, path)
        return body

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        for sc in self.subcons:
            if not _is_absent(sc):
                sc._build(obj.get(sc.name), stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"parse_kstruct_{code.allocateId()}"
        lines = [f"def {fname}(io, this):", "    r = _kp.Body()"]
        for sc in self.subcons:
            lines.append(f"    r[{sc.name!r}] = {sc._compileparse(code)}")
        lines.append("    return r")
        code.append("\n".join(lines))
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(_MODULE_IMPORT)
        fname = f"build_kstruct_{code.allocateId()}"
        lines = [f"def {fname}(obj, io, this):", "    objdict = obj"]
        for sc in self.subcons:
            if _is_absent(sc):
                continue
            lines.append(f"    obj = objdict.get({sc.name!r})")
            lines.append(f"    {sc._compilebuild(code)}")
        lines.append("    return objdict")
        code.append("\n".join(lines))
        return f"{fname}(obj, io, this)"


def _is_absent(sc: Construct) -> bool:
    return isinstance(getattr(sc, "subcon", sc), Computed)
