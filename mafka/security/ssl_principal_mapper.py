"""Kafka's ``SslPrincipalMapper`` (KIP-371): ``ssl.principal.mapping.rules``.

Owns turning the distinguished name of a verified TLS client certificate (in
the form Java's ``X500Principal.getName()`` gives it, which
:func:`mafka.security.tls.peer_certificate_subject` reproduces) into the name
of the connection's ``User:`` principal.  Pure functions of the rules text;
no I/O, no state besides the parsed rules.

The rules are a comma-separated list, tried in order; the first that matches
names the principal:

* ``DEFAULT`` — the distinguished name unchanged (Kafka's default rules);
* ``RULE:pattern/replacement/`` — when ``pattern`` matches the *whole* name,
  the name is rewritten with ``replacement`` (``$1`` refers to a group); a
  trailing ``L`` or ``U`` (``RULE:pattern/replacement/L``) lower- or
  upper-cases the result.  ``/`` and ``\\`` inside the pattern or the
  replacement are escaped with a backslash; commas need no escaping (the
  splitter knows where a rule ends, exactly as Kafka's does).

When no rule matches, :meth:`SslPrincipalMapper.get_name` raises
:class:`NoMatchingRule` (Kafka's ``NoMatchingRule``, an ``IOException``).
Kafka's ``DefaultKafkaPrincipalBuilder`` wraps it in a ``KafkaException``
("Failed to map name for '<dn>' based on SSL principal mapping rules."), and
the broker closes the connection: the client's authentication fails.  The
broker's network edge is expected to do the same.

Java and Python regular expressions: the patterns are compiled with Python's
:mod:`re` in ASCII mode, which matches Java's defaults for ``\\w``, ``\\d``,
``\\s``, ``\\b`` and case-insensitive matching.  ``(?<name>...)`` groups are
accepted (rewritten to Python's ``(?P<name>...)``); Java-only syntax Python
lacks (``\\p{...}`` classes, ``\\Q...\\E``) is refused as an invalid rule.
Replacements follow ``java.util.regex.Matcher.appendReplacement``: ``$n`` with
Java's greedy-but-bounded digit rule, ``${name}``, and ``\\x`` for a literal
``x``; Kafka's own pre-pass (``escapeLiteralBackReferences``, which turns
references to groups that do not exist into literal text) is reproduced
verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_SSL_PRINCIPAL_MAPPING_RULES", "NoMatchingRule", "SslPrincipalMapper"]

#: ``BrokerSecurityConfigs.DEFAULT_SSL_PRINCIPAL_MAPPING_RULES``.
DEFAULT_SSL_PRINCIPAL_MAPPING_RULES: Final = "DEFAULT"

# Kafka's RULE_PATTERN, character for character (Java's string escapes undone).  Groups: 1
# DEFAULT, 2 the pattern, 4 the replacement, 6 the L/U flag, 7 anything else (an invalid rule
# when not empty).
_RULE_PATTERN: Final = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER: Final = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER: Final = re.compile(_RULE_PATTERN)
_BACK_REFERENCE: Final = re.compile(r"\$(\d+)")
# A Java named group "(?<name>"; not a look-behind "(?<=" / "(?<!".
_JAVA_NAMED_GROUP: Final = re.compile(r"(?<!\\)\(\?<(?=[A-Za-z])")


class NoMatchingRule(Exception):  # Kafka's class name, verbatim (no Error suffix)
    """No rule of ``ssl.principal.mapping.rules`` applies to a distinguished name.

    Kafka's ``SslPrincipalMapper.NoMatchingRule``; the message is Kafka's
    ``No rules apply to <dn>, rules [<rules>]``.  The connection's
    authentication fails.
    """


@dataclass(frozen=True)
class _Rule:
    """One parsed rule: ``DEFAULT`` (``pattern`` None) or ``RULE:pattern/replacement/[LU]``."""

    pattern: re.Pattern[str] | None
    source: str
    replacement: str
    to_lower: bool
    to_upper: bool

    def apply(self, distinguished_name: str) -> str | None:
        """The rewritten name, or None when this rule does not match the whole name.

        Raises:
            ValueError: the replacement refers to a group the pattern lacks in a way
                Kafka's pre-pass leaves alone (Java's ``IndexOutOfBoundsException``), or
                is malformed (a trailing ``\\`` or ``$``).
        """
        if self.pattern is None:
            return distinguished_name
        if self.pattern.fullmatch(distinguished_name) is None:
            return None
        replacement = _escape_literal_back_references(self.replacement, self.pattern.groups)
        # Java's String.replaceAll: every match in the name is replaced (the pattern matched
        # the whole name, but ".*"-like patterns also match the empty tail, as in Java).
        result = self.pattern.sub(lambda m: _java_replacement(replacement, m), distinguished_name)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        # Kafka's Rule.toString, which the mapper's toString (and its error message) lists.
        if self.pattern is None:
            return "DEFAULT"
        text = "RULE:" + self.source + "/" + self.replacement
        if self.to_lower:
            text += "/L"
        elif self.to_upper:
            text += "/U"
        return text


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed: :meth:`get_name` maps a DN to a principal name."""

    def __init__(self, rules: str | None = None) -> None:
        """Parses ``ssl.principal.mapping.rules``; see :meth:`from_rules`.

        Raises:
            ValueError: as :meth:`from_rules`.
        """
        if rules is None:
            rules = DEFAULT_SSL_PRINCIPAL_MAPPING_RULES
        parsed = (_parse_rule(text) for text in _split_rules(rules))
        self._rules = tuple(rule for rule in parsed if rule is not None)

    @classmethod
    def from_rules(cls, rules: str | None) -> SslPrincipalMapper:
        """Parses ``ssl.principal.mapping.rules`` (None means Kafka's default, ``DEFAULT``).

        Empty rules (``,,``) are ignored; an empty text gives a mapper with no rules, for
        which every :meth:`get_name` fails.

        Raises:
            ValueError: a rule is not ``DEFAULT`` or ``RULE:pattern/replacement/[LU]``
                (Kafka's ``IllegalArgumentException``: ``Invalid rule: ...``), or its
                pattern is not a valid regular expression.
        """
        return cls(rules)

    def get_name(self, distinguished_name: str) -> str:
        """The principal name for ``distinguished_name``: what the first matching rule gives.

        Raises:
            NoMatchingRule: no rule matches (``No rules apply to <dn>, rules [...]``).
            ValueError: the matching rule's replacement names a group its pattern lacks
                (Java's ``IndexOutOfBoundsException``).
        """
        for rule in self._rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self._rules_text()}")

    def _rules_text(self) -> str:
        # java.util.List.toString.
        return "[" + ", ".join(str(rule) for rule in self._rules) + "]"

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = {self._rules_text()})"

    __repr__ = __str__


def _split_rules(rules: str) -> list[str]:
    """Kafka's ``splitRules``: the text of each rule, found by the splitter regex.

    The splitter's RULE alternative consumes ``pattern/replacement/`` up to unescaped
    slashes, so commas inside a pattern do not end the rule.
    """
    return [m.group(1) for m in _RULE_SPLITTER.finditer(rules.strip())]


def _parse_rule(rule: str) -> _Rule | None:
    """Kafka's ``parseRules`` for one rule; None for an empty rule (ignored, as in Kafka).

    Raises:
        ValueError: not a valid rule, or an invalid regular expression.
    """
    m = _RULE_PARSER.match(rule)
    if m is None:  # cannot happen: the last alternative matches the empty string
        raise ValueError(f"Invalid rule: {rule}")
    if m.end() != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[m.end():]}`")
    if m.group(1) is not None:
        return _Rule(None, "", "", False, False)
    if m.group(2) is None:
        return None
    source = m.group(2)
    try:
        pattern = re.compile(_JAVA_NAMED_GROUP.sub("(?P<", source), re.ASCII)
    except re.error as exc:
        # Java's Pattern.compile throws PatternSyntaxException, an IllegalArgumentException.
        raise ValueError(f"Invalid rule: `{rule}`: {exc}") from exc
    flag = m.group(6)
    return _Rule(pattern, source, m.group(4), flag == "L", flag == "U")


def _escape_literal_back_references(unescaped: str, groups: int) -> str:
    """Kafka's ``escapeLiteralBackReferences`` (from Apache NiFi), reproduced exactly.

    A ``$n`` naming a group the pattern does not have is first shortened digit by digit
    (``$12`` with one group is ``$1`` followed by ``2``); if even one digit is too many,
    its ``$`` is escaped so the reference stays literal text.  Like Kafka, the positions
    come from the original text while the escapes go into the text being built, so a
    second escape lands one character early; that is Kafka's behaviour, kept.
    """
    if groups == 0:
        return unescaped
    value = unescaped
    for m in _BACK_REFERENCE.finditer(unescaped):
        digits = m.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            group_start = m.start(1)
            value = value[: group_start - 1] + "\\" + value[group_start - 1:]
    return value


def _java_replacement(replacement: str, match: re.Match[str]) -> str:
    """``Matcher.appendReplacement``'s reading of ``replacement`` for one match.

    Raises:
        ValueError: a trailing ``\\`` or ``$``, a ``$`` not followed by a group, or a
            reference to a group that does not exist.
    """
    groups = match.re.groups
    out: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            i += 1
            if i == n:
                raise ValueError("character to be escaped is missing")
            out.append(replacement[i])
            i += 1
        elif c == "$":
            i += 1
            if i == n:
                raise ValueError("Illegal group reference: group index is missing")
            if replacement[i] == "{":
                end = replacement.find("}", i)
                name = replacement[i + 1:end] if end > 0 else ""
                if end < 0 or not name:
                    raise ValueError("named capturing group is missing trailing '}'" if end < 0
                                     else "named capturing group has 0 length name")
                if name not in match.re.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                out.append(match.group(name) or "")
                i = end + 1
                continue
            if not ("0" <= replacement[i] <= "9"):
                raise ValueError("Illegal group reference")
            ref = int(replacement[i])
            if ref > groups:
                raise ValueError(f"No group {ref}")
            i += 1
            # Java reads further digits only while the longer number still names a group.
            while i < n and "0" <= replacement[i] <= "9":
                longer = ref * 10 + int(replacement[i])
                if longer > groups:
                    break
                ref = longer
                i += 1
            # A group that did not participate in the match appends nothing (Java).
            out.append(match.group(ref) or "")
        else:
            out.append(c)
            i += 1
    return "".join(out)
