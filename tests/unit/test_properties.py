r"""mafka.properties: java.util.Properties.load / store, case by case from the Javadoc and LineReader.

Expected values are what OpenJDK 17's ``Properties.load`` returns for the same input.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mafka import properties
from mafka.properties import MalformedEscapeError, Property, dumps, entries, load_file, loads, store

# ------------------------------------------------------------------ the Javadoc's examples


@pytest.mark.parametrize("line", ["Truth = Beauty", " Truth:Beauty", "Truth                    :Beauty"])
def test_javadoc_truth_is_beauty(line: str) -> None:
    assert loads(line + "\n") == {"Truth": "Beauty"}
    assert loads(line) == {"Truth": "Beauty"}  # the end of the text ends the line too


def test_javadoc_fruits_continuation() -> None:
    text = (
        "fruits                           apple, banana, pear, \\\n"
        "                                 cantaloupe, watermelon, \\\n"
        "                                 kiwi, mango\n"
    )
    assert loads(text) == {"fruits": "apple, banana, pear, cantaloupe, watermelon, kiwi, mango"}


def test_javadoc_cheeses_has_an_empty_value() -> None:
    assert loads("cheeses\n") == {"cheeses": ""}
    assert loads("cheeses   \n") == {"cheeses": ""}


def test_javadoc_escaped_key_terminators() -> None:
    assert loads("\\:\\=\n") == {":=": ""}
    assert loads("\\:\\= = v") == {":=": "v"}
    assert loads("a\\ b\\\tc=d") == {"a b\tc": "d"}


# ------------------------------------------------------------------ lines


def test_comments_and_blank_lines() -> None:
    text = "# hash\n! bang\n   # indented\n\t!tab\n\n   \t\f \nk=v\n#k=other\n"
    assert loads(text) == {"k": "v"}


def test_a_comment_line_ending_in_a_backslash_is_not_continued() -> None:
    assert loads("# comment \\\nk=v\n") == {"k": "v"}
    assert loads("! comment \\\\\\\nk=v\n") == {"k": "v"}


def test_a_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert loads("x = one \\\n   #two\n") == {"x": "one #two"}


def test_an_empty_continued_line_does_not_protect_the_next_from_being_a_comment() -> None:
    # LineReader: a logical line holding nothing yet (only the removed backslash) is "new".
    assert loads("\\\n#k=v\nb=1\n") == {"b": "1"}
    assert loads("  \\\n  k=v\n") == {"k": "v"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=x\\\n  y\n", {"a": "xy"}),  # one backslash: continued, leading blanks dropped
        ("a=x\\\\\nb=y\n", {"a": "x\\", "b": "y"}),  # two: an escaped backslash
        ("a=x\\\\\\\n  y\n", {"a": "x\\y"}),  # three: an escaped backslash, then continued
        ("a=x\\\\\\\\\nb=y\n", {"a": "x\\\\", "b": "y"}),  # four
        ("a=x\\", {"a": "x"}),  # at the end of the text the backslash is dropped
        ("a=x\\\n", {"a": "x"}),
        ("a=x\\\\\\", {"a": "x\\"}),
        ("a=x\\\n\nb=y", {"a": "x", "b": "y"}),  # a blank continuation line ends the line
    ],
)
def test_trailing_backslashes(text: str, expected: dict[str, str]) -> None:
    assert loads(text) == expected


def test_lone_backslash_lines() -> None:
    assert loads("\\") == {"": ""}
    assert loads("\\\n") == {"": ""}
    assert loads("\\\n\n") == {}


@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"])
def test_line_terminators(eol: str) -> None:
    text = f"a=1{eol}b=2\\{eol}   3{eol}{eol}c=4{eol}"
    assert loads(text) == {"a": "1", "b": "23", "c": "4"}


def test_crlf_after_a_continuation_is_one_line_end() -> None:
    assert loads("a=1,\\\r\n   2\r\nb=3") == {"a": "1,2", "b": "3"}
    assert loads("a=1,\\\r\n\nb=3") == {"a": "1,", "b": "3"}


# ------------------------------------------------------------------ keys and values


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        ("k=v", "k", "v"),
        ("k : v", "k", "v"),
        ("k v", "k", "v"),
        ("k\t\f v", "k", "v"),
        ("k:=v", "k", "=v"),
        ("k = = v", "k", "= v"),
        ("k==v", "k", "=v"),
        ("k v=w", "k", "v=w"),
        ("k = x = y", "k", "x = y"),
        ("=v", "", "v"),
        (":", "", ""),
        ("k=v  \t", "k", "v  \t"),  # trailing white space is kept
        ("k=  ", "k", ""),
        ("k=\\  x", "k", "  x"),  # an escaped leading space
    ],
)
def test_key_and_value_split(line: str, key: str, value: str) -> None:
    assert loads(line) == {key: value}


def test_escapes() -> None:
    text = "k\\tx=\\t\\n\\r\\f|\\b\\z\\'\\\"\\\\|\\#\\!\\=\\:\\ \n"
    assert loads(text) == {"k\tx": "\t\n\r\f|bz'\"\\|#!=: "}


def test_unicode_escapes() -> None:
    assert loads("caf\\u00e9=\\u00C9t\\u00e9 \\u20ac\\u0041") == {"café": "Été €A"}
    assert loads("k=\\uD83D\\uDE00") == {"k": "\U0001f600"}  # a surrogate pair is one code point
    assert loads("k=\\uD83D!") == {"k": "\ud83d!"}  # a lone surrogate stays, as in a Java String
    assert loads("k=\\u005cn") == {"k": "\\n"}  # no second round of escape processing


@pytest.mark.parametrize("text", ["k=\\u12g4", "k=\\u12", "k=\\u", "\\u00=v", "k\\u=v", "a=1\nb=\\uzzzz\n"])
def test_malformed_unicode_escape(text: str) -> None:
    with pytest.raises(MalformedEscapeError) as info:
        loads(text)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == "Malformed \\uxxxx encoding."
    assert info.value.line == text.count("\n", 0, text.index("\\u")) + 1


def test_duplicate_keys_last_wins() -> None:
    assert loads("a=1\nb=2\na=3\n") == {"a": "3", "b": "2"}


def test_entries_report_lines_and_separators() -> None:
    text = "# c\n\na=1\nb 2\\\n  more\r\nc\r\nd:\n"
    assert list(entries(text)) == [
        Property("a", "1", 3, True),
        Property("b", "2more", 4, False),
        Property("c", "", 6, False),
        Property("d", "", 7, True),
    ]


def test_openjdk_load_parsing_regression_input() -> None:
    # OpenJDK's test/jdk/java/util/Properties/LoadParsing.java expectations.
    text = "# comment\\\nkey1=value1\nkey2=abc\\\\defg\\\\\nkey3    =    value3\nkey4 = :value4\n   # x=y\n"
    assert loads(text) == {"key1": "value1", "key2": "abc\\defg\\", "key3": "value3", "key4": ":value4"}


# ------------------------------------------------------------------ files


def test_load_file_reads_iso_8859_1(tmp_path: Path) -> None:
    p = tmp_path / "x.properties"
    p.write_bytes(b"rack=r\xe9gion\nutf8=\xc3\xa9\nesc=\\u00e9\\u20AC\n")
    assert load_file(p) == {"rack": "région", "utf8": "Ã©", "esc": "é€"}
    assert load_file(str(p)) == load_file(p)


def test_load_file_errors(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        load_file(tmp_path / "missing.properties")
    (tmp_path / "bad.properties").write_bytes(b"a=1\r\nb=\\u12\r\n")
    with pytest.raises(MalformedEscapeError) as info:
        load_file(tmp_path / "bad.properties")
    assert info.value.line == 2


# ------------------------------------------------------------------ writing


def test_dumps_escapes_like_properties_store() -> None:
    assert dumps({"a b": " x y"}) == "a\\ b=\\ x y\n"
    assert dumps({"k=:#!": "v=:#!"}) == "k\\=\\:\\#\\!=v\\=\\:\\#\\!\n"
    assert dumps({"t": "\t\n\r\f\\"}) == "t=\\t\\n\\r\\f\\\\\n"
    assert dumps({"u": "é\x7f\x00€\U0001f600~ "}) == "u=\\u00E9\\u007F\\u0000\\u20AC\\uD83D\\uDE00~ \n"
    assert dumps({}) == ""


def test_dumps_minimal_leaves_what_load_does_not_need() -> None:
    assert dumps({"server.1": "zk1:2888:3888", "a#b": "=#!x"}, minimal=True) == (
        "server.1=zk1:2888:3888\na#b==#!x\n"
    )
    assert dumps({"#k": "v", "!k": "v", "k:=": " \\é"}, minimal=True) == (
        "\\#k=v\n\\!k=v\nk\\:\\==\\ \\\\\\u00E9\n"
    )


TRICKY = [
    "", " ", "  lead", "trail  ", "a b", "=", ":", "#", "!", "#x", "!x", "x#", "\\", "\\\\",
    "\\u0041", "a\\", "\t\n\r\f", "\x00\x1f\x7f", "é", "ÿ€", "\U0001f600", "\ud83d", "k=v:w",
    "x\\\ny", "\u2028", " = : ",
]


@pytest.mark.parametrize("minimal", [False, True])
@pytest.mark.parametrize("text", TRICKY)
def test_round_trip_tricky_strings(text: str, minimal: bool) -> None:
    mapping = {text: text, f"k{text}": f"v{text}", "plain": text}
    written = dumps(mapping, minimal=minimal)
    assert written.isascii()
    assert loads(written) == mapping


def test_round_trip_random_strings() -> None:
    rng = random.Random(28)
    alphabet = list(" \t\f\r\n\\=:#!uaé€\x00") + ["\U0001f600", "\\u", "\\\n"]
    for _ in range(500):
        mapping = {
            "".join(rng.choices(alphabet, k=rng.randint(0, 8))): "".join(rng.choices(alphabet, k=rng.randint(0, 8)))
            for _ in range(rng.randint(0, 4))
        }
        for minimal in (False, True):
            assert loads(dumps(mapping, minimal=minimal)) == mapping
        assert load_bytes(store(mapping)) == mapping


def load_bytes(data: bytes) -> dict[str, str]:
    return loads(data.decode("iso-8859-1"))


def test_store_header() -> None:
    # Properties.store(out, "") as Kafka writes meta.properties.
    assert store({"version": "0", "broker.id": "1"}, "", now=0) == (
        b"#\n#Thu Jan 01 00:00:00 UTC 1970\nversion=0\nbroker.id=1\n"
    )
    assert store({}, now=86400 * 365) == b"#Fri Jan 01 00:00:00 UTC 1971\n"
    # writeComments: line ends start new '#' lines unless one already starts with '#' or '!';
    # characters past U+00FF are escaped, Latin-1 ones written as they are.
    assert store({}, "one\r\ntwo\n#three\n!four\ré€", now=0) == (
        b"#one\n#two\n#three\n!four\n#\xe9\\u20AC\n#Thu Jan 01 00:00:00 UTC 1970\n"
    )


def test_store_reads_back(tmp_path: Path) -> None:
    p = tmp_path / "meta.properties"
    p.write_bytes(store({"cluster.id": " é€ =x", "b": "\\"}, ""))
    assert load_file(p) == {"cluster.id": " é€ =x", "b": "\\"}


def test_module_exports() -> None:
    assert set(properties.__all__) == {
        "MalformedEscapeError", "Property", "dumps", "entries", "load_file", "loads", "store",
    }


# ------------------------------------------------------------------ the four readers agree

AGREED_FILE = (
    b"# every reader of properties files goes through mafka.properties\n"
    b"plain=v\n"
    b"spaced : v  \n"  # trailing blanks kept (ZooKeeper trims them itself)
    b"white\tv\n"
    b"esc\\=key=a\\\\b\\u00e9\\t\n"
    b"latin=r\xe9gion\n"
    b"cont=one, \\\n     two\n"
    b"three=x\\\\\\\n  y\n"
    b"! a comment \\\n"
    b"after=comment\n"
)
AGREED = {
    "plain": "v", "spaced": "v  ", "white": "v", "esc=key": "a\\b\u00e9\t", "latin": "r\u00e9gion",
    "cont": "one, two", "three": "x\\y", "after": "comment",
}


def test_every_reader_agrees(tmp_path: Path) -> None:
    from mafka.broker.config import load_properties as broker_load
    from mafka.cli.clients import load_properties as cli_load
    from mafka.cli.zookeeper_server_start import zookeeper_config
    from mafka.log.checkpoint import META_PROPERTIES, read_meta_properties

    p = tmp_path / META_PROPERTIES
    p.write_bytes(AGREED_FILE)
    assert broker_load(p) == AGREED
    assert cli_load(str(p)) == AGREED
    assert read_meta_properties(tmp_path) == AGREED
    zk, _ = zookeeper_config({}, AGREED_FILE.decode("iso-8859-1"))
    assert {k: zk[k] for k in AGREED} == {k: v.strip() for k, v in AGREED.items()}


def test_zoo_cfg_render_reads_back() -> None:
    from mafka.cli.zookeeper_server_start import ZooKeeperConfigError, render, zookeeper_config

    config, _ = zookeeper_config({}, "dataDir = C:\\\\zk\\u00e9 data\nclientPort 2182\nserver.1=a:1:2\n")
    assert (config["dataDir"], config["clientPort"]) == ("C:\\zk\u00e9 data", "2182")
    text = render(config)
    assert "dataDir=C:\\\\zk\\u00E9 data\n" in text and "server.1=a:1:2\n" in text
    assert loads(text) == config
    with pytest.raises(ZooKeeperConfigError, match="line 2: Malformed"):
        zookeeper_config({}, "a=1\nb=\\u12\n")
