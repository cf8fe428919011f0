"""mafka.security.ssl_principal_mapper: Kafka's SslPrincipalMapperTest, case for case, and more."""

from __future__ import annotations

import pytest

from mafka.security.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper

# --------------------------------------------------------------------------- Kafka's cases


@pytest.mark.parametrize("rules", [
    "DEFAULT",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
    "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
])
def test_valid_rules(rules: str) -> None:
    SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize("rules", [
    "default",
    "DEFAUL",
    "DEFAULT/L",
    "DEFAULT/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
])
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper.from_rules(rules)


def test_ssl_principal_mapper() -> None:
    rules = ", ".join([
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
        "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "DEFAULT",
    ])
    mapper = SslPrincipalMapper.from_rules(rules)
    assert mapper.get_name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.get_name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.get_name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.get_name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.get_name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


@pytest.mark.parametrize(("expected", "rules"), [
    # seeing is believing
    ("[]", ""),
    ("[DEFAULT]", "DEFAULT"),
    ("[RULE:/]", "RULE://"),
    ("[RULE:/.*]", "RULE:/.*/"),
    ("[RULE:/.*/L]", "RULE:/.*/L"),
    ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
    ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
    ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
    ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
    ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
     "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
    # empty rules are ignored
    ("[]", ",   , , ,      , , ,   "),
    ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
    ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
    ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
    # escape sequences
    ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
    ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
    # rules rule
    ("[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
     "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT"),
])
def test_rules_splitting(expected: str, rules: str) -> None:
    assert str(SslPrincipalMapper.from_rules(rules)) == f"SslPrincipalMapper(rules = {expected})"


def test_comma_with_whitespace() -> None:
    # Java: "RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT"
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.get_name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


# --------------------------------------------------------------------------- beyond Kafka's test


def test_no_matching_rule_fails_with_kafkas_message() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L")
    with pytest.raises(NoMatchingRule) as info:
        mapper.get_name("CN=alice,OU=test,O=Mafka")
    assert str(info.value) == ("No rules apply to CN=alice,OU=test,O=Mafka, rules "
                               "[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L]")
    with pytest.raises(NoMatchingRule, match=r"rules \[\]"):
        SslPrincipalMapper.from_rules("").get_name("CN=x")


def test_default_rules_when_none_are_configured() -> None:
    mapper = SslPrincipalMapper.from_rules(None)
    assert str(mapper) == "SslPrincipalMapper(rules = [DEFAULT])"
    assert mapper.get_name("CN=alice,OU=test,O=Mafka") == "CN=alice,OU=test,O=Mafka"
    assert SslPrincipalMapper().get_name("CN=x") == "CN=x"


def test_the_first_matching_rule_wins_and_a_rule_must_match_the_whole_name() -> None:
    mapper = SslPrincipalMapper.from_rules(
        "RULE:CN=([a-z]+)/$1-first/, RULE:CN=([a-z]+),.*/$1-second/, DEFAULT")
    # The first rule matches only a name that is exactly CN=<lowercase>.
    assert mapper.get_name("CN=alice") == "alice-first"
    assert mapper.get_name("CN=alice,OU=test") == "alice-second"
    assert mapper.get_name("CN=Alice,OU=test") == "CN=Alice,OU=test"


def test_a_pattern_may_contain_commas_and_escaped_slashes() -> None:
    mapper = SslPrincipalMapper.from_rules(r"RULE:^CN=([^,]+),OU=a\/b,O=(.*)$/$2\/$1/U,DEFAULT")
    assert mapper.get_name("CN=svc,OU=a/b,O=acme") == "ACME/SVC"


def test_upper_and_lower_case_flags() -> None:
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/L").get_name("CN=MiXeD") == "mixed"
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/U").get_name("CN=MiXeD") == "MIXED"
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/").get_name("CN=MiXeD") == "MiXeD"


def test_java_replacement_syntax() -> None:
    # $12 with one group is group 1 followed by a literal 2 (Java reads digits while they
    # still name a group).
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$12/").get_name("CN=x") == "x2"
    # A reference to a group the pattern lacks stays literal (Kafka's escapeLiteralBackReferences).
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1@$5/").get_name("CN=x") == "x@$5"
    # A backslash makes the next character literal.
    assert SslPrincipalMapper.from_rules(r"RULE:^CN=(.*)$/\$1=$1/").get_name("CN=x") == "$1=x"
    # A group that did not take part in the match gives nothing.
    assert SslPrincipalMapper.from_rules("RULE:^CN=(a)?(.*)$/[$1][$2]/").get_name("CN=bc") == "[][bc]"
    # Java's named groups and ${name} references.
    assert SslPrincipalMapper.from_rules("RULE:^CN=(?<user>[^,]*).*$/${user}/").get_name("CN=u,O=o") == "u"


def test_a_pattern_python_cannot_compile_is_an_invalid_rule() -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper.from_rules("RULE:^CN=([a-z]$/$1/")


def test_character_classes_are_ascii_as_in_java() -> None:
    mapper = SslPrincipalMapper.from_rules(r"RULE:^CN=(\w+)$/$1/, DEFAULT")
    assert mapper.get_name("CN=abc_1") == "abc_1"
    # Java's \w does not match 'é' by default; Python's would without re.ASCII.
    assert mapper.get_name("CN=café") == "CN=café"
