r"""Java ``.properties`` files, exactly as ``java.util.Properties`` reads and writes them.

Every properties file Mafka reads or writes goes through this module:
``server.properties`` (:mod:`mafka.broker.config`), the CLI tools'
``--producer.config`` / ``--command-config`` files (:mod:`mafka.cli.clients`),
``zookeeper.properties`` and the generated ``zoo.cfg``
(:mod:`mafka.cli.zookeeper_server_start`) and ``meta.properties``
(:mod:`mafka.log.checkpoint`).

Contract of :func:`loads` (``Properties.load(Reader)``, ported from OpenJDK's
``Properties.LineReader``, ``load0`` and ``loadConvert``):

* *Natural* lines end at ``\n``, ``\r``, ``\r\n`` or the end of the text.  A
  *logical* line is one natural line, or several joined by escaping the line end:
  a natural line ending in an **odd** number of backslashes continues on the next
  one; the backslash, the line end and the leading white space of the next line
  are dropped (``\\`` at a line end is an escaped backslash, not a continuation).
* White space is ``' '``, ``'\t'`` and ``'\f'`` only.  Leading white space of every
  natural line is skipped; lines holding only white space are ignored.
* A line whose first non-white character is ``#`` or ``!`` is a comment, unless it
  continues a logical line that already holds a character.  A comment line is never
  continued, even if it ends in a backslash.
* The key runs up to the first unescaped ``=``, ``:`` or white space.  White space
  after the key is skipped, then at most one ``=`` or ``:`` (if the key was not
  already ended by one), then white space again.  The rest of the logical line is
  the value, trailing white space included; a line holding only a key
  (``cheeses``) has the value ``""``.
* Key and value then undergo escape processing: ``\t \n \r \f``, ``\uXXXX``
  (exactly four hex digits, else :class:`MalformedEscapeError`, Java's
  ``IllegalArgumentException("Malformed \\uxxxx encoding.")``), and a backslash
  before any other character yields that character (``\=`` → ``=``, ``\b`` → ``b``).
  ``\uXXXX`` escapes denote UTF-16 code units: a surrogate pair becomes one code
  point, a lone surrogate stays in the string (as in a Java ``String``).
* A duplicate key takes the last value (in the position of its first occurrence).

:func:`load_file` reads a file as ``Properties.load(InputStream)`` does: each byte is
one ISO-8859-1 character.  That is what Kafka's ``Utils.loadProps`` (every
``*.properties`` and ``--*.config`` file), Kafka's ``meta.properties`` reader and
ZooKeeper's ``QuorumPeerConfig`` use, so a UTF-8 ``é`` reads as ``Ã©``; non-Latin-1
characters must be written as ``\uXXXX``.

:func:`dumps` writes ``key=value`` lines escaped as ``Properties.store(OutputStream)``
(``saveConvert``): ``\`` doubled, ``\t \n \r \f`` as escapes, ``=``, ``:``, ``#``,
``!`` and a leading space of the value (every space of the key) backslash-escaped,
every character outside U+0020..U+007E as ``\uXXXX`` (per UTF-16 code unit), so the
text is pure ASCII and ``loads(dumps(m)) == m`` for any string mapping.
``minimal=True`` escapes only what :func:`loads` needs to read the same mapping back
(for files people read).  :func:`store` adds ``Properties.store``'s comment and date
header and returns the ISO-8859-1 bytes.

Example:
    >>> loads("Truth = Beauty\n  fruits  apple, \\\n    pear\ncheeses\nk\\:ey=caf\\u00e9 ")
    {'Truth': 'Beauty', 'fruits': 'apple, pear', 'cheeses': '', 'k:ey': 'café '}
    >>> dumps({"k:ey": " café"})
    'k\\:ey=\\ caf\\u00E9\n'
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final, NamedTuple

__all__ = ["MalformedEscapeError", "Property", "dumps", "entries", "load_file", "loads", "store"]

_WHITE: Final = " \t\f"
_LINE_ENDS: Final = "\r\n"
_SEPARATORS: Final = "=:"
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_UNESCAPE: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE: Final = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


class MalformedEscapeError(ValueError):
    r"""A ``\u`` not followed by four hex digits (Java: ``IllegalArgumentException``).

    ``str()`` is Java's message; ``line`` is the 1-based natural line where the
    logical line holding the escape starts.
    """

    def __init__(self, line: int) -> None:
        super().__init__("Malformed \\uxxxx encoding.")
        self.line = line


class Property(NamedTuple):
    """One key-element pair of a properties text, in file order (duplicates included)."""

    key: str
    value: str
    #: 1-based natural line where the pair's logical line starts.
    line: int
    #: Whether an ``=`` or ``:`` separated key and value (``False`` for ``key value`` and ``key``).
    has_separator: bool


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``Properties.LineReader.readLine``: (first natural line number, raw logical line)."""
    buf: list[str] = []
    skip_white = True  # skipping the leading white space of a natural line
    appended_line_begin = False  # ... of a continuation line (whose line end is not blank)
    backslash = False  # an odd run of backslashes ends buf
    start = 0  # index in text of buf's first character
    line, counted = 1, 0  # natural line number of text[counted]
    i, n = 0, len(text)

    def line_of(index: int) -> int:
        nonlocal line, counted
        part = text[counted:index]
        line += part.count("\n") + part.count("\r") - part.count("\r\n")
        counted = index
        return line

    while i < n:
        c = text[i]
        i += 1
        if skip_white:
            if c in _WHITE or (not appended_line_begin and c in _LINE_ENDS):
                continue
            skip_white = appended_line_begin = False
        if not buf:  # still on a new logical line
            if c in "#!":  # a comment: skip to its line end
                ends = [j for j in (text.find("\r", i), text.find("\n", i)) if j >= 0]
                if not ends:
                    return
                i = min(ends) + 1
                skip_white = True
                continue
            start = i - 1
        if c not in _LINE_ENDS:
            buf.append(c)
            backslash = not backslash if c == "\\" else False
            continue
        if not buf:  # the end of a blank continuation line
            skip_white = True
            continue
        if i >= n:
            break
        if backslash:  # an escaped line end: the logical line goes on
            buf.pop()
            skip_white = appended_line_begin = True
            backslash = False
            if c == "\r" and text[i] == "\n":
                i += 1
            continue
        yield line_of(start), "".join(buf)
        buf = []
        skip_white = True
    if buf:  # the end of the text ends the line; a final odd backslash is dropped
        yield line_of(start), "".join(buf[:-1] if backslash else buf)


def _unescape(raw: str, line: int) -> str:
    """``Properties.loadConvert``."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        c = raw[i]  # never out of range: a logical line cannot end in an odd backslash
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if len(digits) < 4 or not _HEX.issuperset(digits):
                raise MalformedEscapeError(line)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_UNESCAPE.get(c, c))
    # The escapes are UTF-16 code units: join surrogate pairs, keep lone surrogates.
    return "".join(out).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def entries(text: str) -> Iterator[Property]:
    """Every key-element pair of ``text`` in order, as ``Properties.load(Reader)`` reads it.

    Raises:
        MalformedEscapeError: a malformed ``\\uXXXX`` escape (pairs before it are yielded).
    """
    for line, raw in _logical_lines(text):
        n = len(raw)
        key_end, value_start, has_sep, backslash = 0, n, False, False
        while key_end < n:
            c = raw[key_end]
            if not backslash and (c in _SEPARATORS or c in _WHITE):
                value_start, has_sep = key_end + 1, c in _SEPARATORS
                break
            backslash = not backslash if c == "\\" else False
            key_end += 1
        while value_start < n:
            c = raw[value_start]
            if c not in _WHITE:
                if has_sep or c not in _SEPARATORS:
                    break
                has_sep = True
            value_start += 1
        key = _unescape(raw[:key_end], line)
        yield Property(key, _unescape(raw[value_start:], line), line, has_sep)


def loads(text: str) -> dict[str, str]:
    """The properties of ``text``, as ``Properties.load(Reader)``; the last duplicate wins.

    Raises:
        MalformedEscapeError: a malformed ``\\uXXXX`` escape.
    """
    return {p.key: p.value for p in entries(text)}


def load_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file as ``Properties.load(InputStream)`` (Kafka's ``Utils.loadProps``):
    the bytes are ISO-8859-1, one character each.

    Raises:
        OSError: the file cannot be read.
        MalformedEscapeError: a malformed ``\\uXXXX`` escape.
    """
    return loads(Path(path).read_bytes().decode("iso-8859-1"))


def _escape(text: str, *, key: bool, minimal: bool) -> str:
    """``Properties.saveConvert(text, escapeSpace=key, escapeUnicode=true)``; see :func:`dumps`."""
    out: list[str] = []
    for index, c in enumerate(text):
        if c in _ESCAPE:
            out.append(_ESCAPE[c])
        elif c == " ":
            out.append("\\ " if key or index == 0 else " ")
        elif c in "=:#!":
            # minimal: a value is past the separator; only a key's first character opens a comment
            needed = key and (c in _SEPARATORS or index == 0)
            out.append("\\" + c if needed or not minimal else c)
        elif " " <= c <= "~":
            out.append(c)
        else:
            units = c.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[k]:02X}{units[k + 1]:02X}" for k in range(0, len(units), 2))
    return "".join(out)


def dumps(props: Mapping[str, str], *, minimal: bool = False) -> str:
    """``key=value\\n`` lines in ``props``' order, escaped as ``Properties.store`` escapes them.

    With ``minimal``, ``=`` and ``:`` in values and ``#`` / ``!`` after a key's first
    character are left alone (``Properties.load`` reads them back the same).  The
    result is ASCII either way.
    """
    return "".join(
        f"{_escape(k, key=True, minimal=minimal)}={_escape(v, key=False, minimal=minimal)}\n"
        for k, v in props.items()
    )


_DAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _comment_lines(comments: str) -> str:
    """``Properties.writeComments``: ``#`` before each line unless it starts with ``#``/``!``."""
    out = ["#"]
    i, n = 0, len(comments)
    while i < n:
        c = comments[i]
        if c in _LINE_ENDS:
            out.append("\n")
            if c == "\r" and comments[i + 1 : i + 2] == "\n":
                i += 1
            if i == n - 1 or comments[i + 1] not in "#!":
                out.append("#")
        elif c > "\xff":
            units = c.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[k]:02X}{units[k + 1]:02X}" for k in range(0, len(units), 2))
        else:
            out.append(c)
        i += 1
    return "".join(out) + "\n"


def store(props: Mapping[str, str], comments: str | None = None, *, now: float | None = None) -> bytes:
    """The bytes ``Properties.store(OutputStream, comments)`` writes (``\\n`` line ends).

    ``comments`` (if not ``None``) becomes ``#`` lines, then comes ``#`` and
    ``Date.toString()`` of ``now`` (default: the current time) in UTC, then
    :func:`dumps` of ``props``.  Kafka's ``meta.properties`` is ``store(props, "")``.
    """
    t = time.gmtime(time.time() if now is None else now)
    date = (
        f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC {t.tm_year}"
    )
    header = "" if comments is None else _comment_lines(comments)
    return f"{header}#{date}\n{dumps(props)}".encode("iso-8859-1")
