"""``sasl.jaas.config`` values: Kafka's ``JaasConfig`` parser and the options its login modules read.

A value names one login module, a control flag and options::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

This module owns the syntax — tokens exactly as Java's ``StreamTokenizer``
cuts them with the settings Kafka's ``JaasConfig`` uses (words of letters,
digits, ``.``, ``-``, ``_``, ``$`` and characters from U+00A0 up; ``"`` and
``'`` quoted strings with Java's escapes, ending at the closing quote, a line
break or the end; ``//``, ``/* */`` and lone-``/`` comments; unquoted values
that start with a digit, ``.`` or ``-`` are numbers, which have no text, so
Kafka refuses them) — and the meaning of the options Kafka's PLAIN and SCRAM
modules read: :func:`plain_users` (the broker's PLAIN user list) and
:func:`client_credentials` (a client's own ``username``/``password``).

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

__all__ = [
    "CONTROL_FLAGS",
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasEntry",
    "client_credentials",
    "parse_jaas_config",
    "plain_users",
]

PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: JAAS control flags, in the lower case :class:`JaasEntry` keeps them in.
CONTROL_FLAGS: Final = ("required", "requisite", "sufficient", "optional")

#: PlainServerCallbackHandler's option prefix for the users it accepts.
_USER_PREFIX = "user_"


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module of a JAAS config (Java's ``AppConfigurationEntry``).

    ``control_flag`` is lower case; ``options`` is read-only.  The repr names
    the options but not their values (they hold passwords).
    """

    login_module: str
    control_flag: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __repr__(self) -> str:
        return (
            f"JaasEntry(login_module={self.login_module!r}, control_flag={self.control_flag!r}, "
            f"options=<{', '.join(sorted(self.options))}>)"
        )


def parse_jaas_config(text: str) -> JaasEntry:
    """The single login module of a ``sasl.jaas.config`` value (Kafka's ``JaasContext.load``).

    Raises:
        ValueError: Kafka's messages — "Login module not specified in JAAS
            config", "JAAS config property contains N login modules, should be
            1 module", "Login module control flag not specified in JAAS
            config", "Login module control flag is not available in the JAAS
            config", "Invalid login module control flag 'x' in JAAS config",
            "Value not specified for key 'k' in JAAS config", "JAAS config
            entry not terminated by semi-colon" — and "Login module name not
            specified in JAAS config" where Java fails without a message.
    """
    tokens = _Tokenizer(text)
    entries = []
    while (token := tokens.next()).kind != _EOF:
        entries.append(_parse_entry(token, tokens))
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """User name → password from the ``user_<name>="<password>"`` options (Kafka's ``PlainServerCallbackHandler``).

    As in Kafka, only a ``PlainLoginModule`` entry names users: any other
    module gives an empty mapping (every PLAIN login then fails).
    """
    if entry.login_module != PLAIN_LOGIN_MODULE:
        return {}
    return {
        key[len(_USER_PREFIX) :]: value
        for key, value in entry.options.items()
        if key.startswith(_USER_PREFIX) and len(key) > len(_USER_PREFIX)
    }


def client_credentials(entry: JaasEntry) -> tuple[str, str]:
    """The ``username`` and ``password`` options a client logs in with (PLAIN or SCRAM modules).

    Raises:
        ValueError: either option is missing.
    """
    username = entry.options.get("username")
    password = entry.options.get("password")
    if username is None or password is None:
        missing = "username" if username is None else "password"
        raise ValueError(f"JAAS config of {entry.login_module} does not specify '{missing}'")
    return username, password


def _parse_entry(first: _Token, tokens: _Tokenizer) -> JaasEntry:
    """One ``module flag key=value ... ;`` whose first token has been read (Kafka's order of checks)."""
    login_module = first.text
    flag_token = tokens.next()
    if flag_token.kind == _EOF:
        raise ValueError("Login module control flag not specified in JAAS config")
    if flag_token.text is None:
        raise ValueError("Login module control flag is not available in the JAAS config")
    # Java compares flag.toUpperCase(Locale.ROOT); str.upper maps the same letters.
    flag = flag_token.text.upper().lower()
    if flag not in CONTROL_FLAGS:
        raise ValueError(f"Invalid login module control flag '{flag_token.text}' in JAAS config")
    options: dict[str, str] = {}
    while (token := tokens.next()).kind != _EOF and token.kind != ";":
        key = token.text
        if tokens.next().kind != "=" or (value := tokens.next()).kind == _EOF or value.text is None:
            shown = "null" if key is None else key
            raise ValueError(f"Value not specified for key '{shown}' in JAAS config")
        # A number or symbol as key has no text; Java then stores a null key no module reads.
        if key is not None:
            options[key] = value.text
    if token.kind != ";":
        raise ValueError("JAAS config entry not terminated by semi-colon")
    if not login_module:
        raise ValueError("Login module name not specified in JAAS config")
    return JaasEntry(login_module, flag, options)


# ----------------------------------------------------------------------------- tokenizer

_EOF: Final = "<EOF>"
_WORD: Final = "<WORD>"
_NUMBER: Final = "<NUMBER>"

_WHITESPACE, _DIGIT, _ALPHA, _QUOTE, _COMMENT = 1, 2, 4, 8, 16


def _syntax_table() -> list[int]:
    """StreamTokenizer's default table with JaasConfig's extra word characters ``-``, ``_``, ``$``."""
    table = [0] * 256
    for code in range(256):
        char = chr(code)
        if code <= 0x20:
            table[code] = _WHITESPACE
        elif char.isascii() and char.isalpha() or code >= 0xA0:
            table[code] = _ALPHA
    for char in "0123456789.-":
        table[ord(char)] |= _DIGIT
    for char in "-_$":
        table[ord(char)] |= _ALPHA
    table[ord('"')] = table[ord("'")] = _QUOTE
    table[ord("/")] = _COMMENT
    return table


_SYNTAX: Final = _syntax_table()
_ESCAPES: Final = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


def _ctype(char: str) -> int:
    code = ord(char)
    return _SYNTAX[code] if code < 256 else _ALPHA


@dataclass(frozen=True, slots=True)
class _Token:
    """``kind``: _EOF, _WORD, _NUMBER, or the character itself (a symbol, or the quote of a string).

    ``text`` is Java's ``sval``: the word or the string's body, None otherwise.
    """

    kind: str
    text: str | None = None


class _Tokenizer:
    """Java's ``StreamTokenizer.nextToken`` over a string, with slash-slash and slash-star comments on."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0

    def _read(self) -> str | None:
        if self._pos >= len(self._text):
            return None
        self._pos += 1
        return self._text[self._pos - 1]

    def _unread(self, char: str | None) -> None:
        """Makes *char*, the last one read, the next one again (Java's ``peekc``)."""
        if char is not None:
            self._pos -= 1

    def next(self) -> _Token:
        char = self._read()
        while True:  # each pass skips blanks, then returns a token or skips one comment
            while char is not None and _ctype(char) & _WHITESPACE:
                char = self._read()
            if char is None:
                return _Token(_EOF)
            ctype = _ctype(char)
            if ctype & _DIGIT:
                return self._number(char)
            if ctype & _ALPHA:
                return self._word(char)
            if ctype & _QUOTE:
                return self._quoted(char)
            if char != "/":
                return _Token(char)
            after = self._read()
            if after == "*":
                if not self._skip_block_comment():
                    return _Token(_EOF)
                char = self._read()
            else:
                # "//" or a lone "/" (a comment character): the rest of the line goes.  Java
                # drops the character after a lone "/" unseen, even a line break.
                char = self._read()
                while char is not None and char not in "\n\r":
                    char = self._read()

    def _number(self, char: str) -> _Token:
        if char == "-":
            following = self._read()
            if following is None or not (following == "." or "0" <= following <= "9"):
                self._unread(following)
                return _Token("-")
            char = following
        seen_dot = False
        current: str | None = char
        while current is not None and ("0" <= current <= "9" or (current == "." and not seen_dot)):
            seen_dot = seen_dot or current == "."
            current = self._read()
        self._unread(current)
        return _Token(_NUMBER)

    def _word(self, char: str) -> _Token:
        start = self._pos - 1
        current = self._read()
        while current is not None and _ctype(current) & (_ALPHA | _DIGIT):
            current = self._read()
        self._unread(current)
        return _Token(_WORD, self._text[start : self._pos])

    def _quoted(self, quote: str) -> _Token:
        body: list[str] = []
        ahead = self._read()
        while ahead is not None and ahead != quote and ahead not in "\n\r":
            if ahead == "\\":
                char, ahead = self._escape()
            else:
                char, ahead = ahead, self._read()
            body.append(char)
        if ahead != quote:
            self._unread(ahead)  # a line break or the end closes the string too
        return _Token(quote, "".join(body))

    def _escape(self) -> tuple[str, str | None]:
        """The character a backslash escape stands for, and the character after it."""
        first = self._read()
        if first is None:
            return "\uffff", None  # Java appends (char) -1
        if not "0" <= first <= "7":
            return _ESCAPES.get(first, first), self._read()
        value = int(first)
        second = self._read()
        if second is None or not "0" <= second <= "7":
            return chr(value), second
        value = value * 8 + int(second)
        third = self._read()
        # Three octal digits only up to \377.
        if third is None or not "0" <= third <= "7" or first > "3":
            return chr(value), third
        return chr(value * 8 + int(third)), self._read()

    def _skip_block_comment(self) -> bool:
        """Skips past ``*/``; False at the end of the text.  Java's loop, quirks included."""
        previous = ""
        while True:
            char = self._read()
            if char == "/" and previous == "*":
                return True
            # A line break's next character is taken without checking it for the comment's end.
            if char == "\r":
                char = self._read()
                if char == "\n":
                    char = self._read()
            elif char == "\n":
                char = self._read()
            if char is None:
                return False
            previous = char
