"""sasl.jaas.config parsing (mafka.security.jaas): Kafka's JaasConfig/JaasContext and StreamTokenizer rules."""

from __future__ import annotations

import pytest

from mafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    client_credentials,
    parse_jaas_config,
    plain_users,
)

KAFKA_PLAIN_BROKER = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)
KAFKA_SCRAM_CLIENT = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="x";'


def test_kafka_plain_broker_example() -> None:
    entry = parse_jaas_config(KAFKA_PLAIN_BROKER)
    assert entry.login_module == PLAIN_LOGIN_MODULE
    assert entry.control_flag == "required"
    assert dict(entry.options) == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": "alice-secret",
    }
    assert plain_users(entry) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert client_credentials(entry) == ("admin", "admin-secret")


def test_kafka_scram_client_example() -> None:
    entry = parse_jaas_config(KAFKA_SCRAM_CLIENT)
    assert entry == JaasEntry(SCRAM_LOGIN_MODULE, "required", {"username": "admin", "password": "x"})
    assert client_credentials(entry) == ("admin", "x")
    assert plain_users(entry) == {}  # Kafka reads user_ options only from PlainLoginModule


def test_multi_line_with_comments() -> None:
    text = """
        // the broker's users
        org.apache.kafka.common.security.plain.PlainLoginModule /* flag: */ REQUIRED
            username="admin"   // the broker itself
            password="admin-secret"
            user_admin="admin-secret";
    """
    entry = parse_jaas_config(text)
    assert entry.control_flag == "required"
    assert plain_users(entry) == {"admin": "admin-secret"}


@pytest.mark.parametrize("flag", ["required", "Requisite", "SUFFICIENT", "optional"])
def test_control_flags(flag: str) -> None:
    assert parse_jaas_config(f"m {flag};").control_flag == flag.lower()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('m required k="a b";', "a b"),
        ("m required k='single \"quoted\"';", 'single "quoted"'),
        (r'm required k="q\"uote";', 'q"uote'),
        (r'm required k="back\\slash";', "back\\slash"),
        (r'm required k="\n\t\r\b\f\a\v";', "\n\t\r\b\f\x07\x0b"),
        (r'm required k="\101\60\0";', "A0\0"),
        (r'm required k="\477";', "'7"),  # three octal digits only up to \377
        (r'm required k="\q";', "q"),  # an unknown escape keeps the character
        ('m required k="";', ""),
        ('m required k="semi;colon=and,comma";', "semi;colon=and,comma"),
        ('m required k="open\n;', "open"),  # a line break ends a string, as in Java
        ("m required k=word_with-dash$and.dots9;", "word_with-dash$and.dots9"),
        ("m required k=\u00e9t\u00e9;", "\u00e9t\u00e9"),
    ],
)
def test_values(text: str, value: str) -> None:
    assert parse_jaas_config(text).options["k"] == value


def test_duplicate_key_last_wins_and_quoted_keys() -> None:
    assert dict(parse_jaas_config('m required "k"="1" k="2" "x y"=z;').options) == {"k": "2", "x y": "z"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("  // nothing\n /* at all */ ", "Login module not specified in JAAS config"),
        ("a required; b required;", "JAAS config property contains 2 login modules, should be 1 module"),
        ("a required; b optional; c sufficient;", "JAAS config property contains 3 login modules, should be 1 module"),
        ("m", "Login module control flag not specified in JAAS config"),
        ("m ;", "Login module control flag is not available in the JAAS config"),
        ("m mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
        ('m required k="v"', "JAAS config entry not terminated by semi-colon"),
        ('m required k="v;', "JAAS config entry not terminated by semi-colon"),
        ("m required k;", "Value not specified for key 'k' in JAAS config"),
        ("m required k=;", "Value not specified for key 'k' in JAAS config"),
        ('m required k "v";', "Value not specified for key 'k' in JAAS config"),
        ("m required k=123;", "Value not specified for key 'k' in JAAS config"),  # a number, no text
        ("m required k=-x;", "Value not specified for key 'k' in JAAS config"),
        ("m required k=/v;", "Value not specified for key 'k' in JAAS config"),  # '/' starts a comment
        ('m required ="v";', "Value not specified for key 'null' in JAAS config"),
        ("123 required;", "Login module name not specified in JAAS config"),
        ('a required k="v"; b', "Login module control flag not specified in JAAS config"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_jaas_config(text)
    assert str(info.value) == message


def test_entry_is_read_only_and_hides_values() -> None:
    entry = parse_jaas_config(KAFKA_PLAIN_BROKER)
    with pytest.raises(TypeError):
        entry.options["user_mallory"] = "x"  # type: ignore[index]
    with pytest.raises(AttributeError):
        entry.control_flag = "optional"  # type: ignore[misc]
    assert "admin-secret" not in repr(entry)
    assert "user_alice" in repr(entry)


def test_entry_copies_its_options() -> None:
    options = {"username": "a", "password": "b"}
    entry = JaasEntry(PLAIN_LOGIN_MODULE, "required", options)
    options["username"] = "changed"
    assert entry.options["username"] == "a"


def test_plain_users_ignore_a_bare_prefix() -> None:
    entry = parse_jaas_config(f'{PLAIN_LOGIN_MODULE} required user_="x" user_bob="b" users_x="y";')
    assert plain_users(entry) == {"bob": "b"}


@pytest.mark.parametrize(("options", "missing"), [('username="a"', "password"), ('password="b"', "username")])
def test_client_credentials_missing(options: str, missing: str) -> None:
    entry = parse_jaas_config(f"{SCRAM_LOGIN_MODULE} required {options};")
    with pytest.raises(ValueError, match=f"'{missing}'"):
        client_credentials(entry)
