"""Kafka's ``KafkaPrincipal``: the identity a connection authenticated as.

``User:alice`` after SASL, ``User:CN=alice,OU=…`` after a TLS client
certificate (or what ``ssl.principal.mapping.rules`` makes of it), and
``User:ANONYMOUS`` on a PLAINTEXT listener or a TLS one without a client
certificate.  ACLs name principals in the same ``type:name`` form.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["ANONYMOUS", "USER_TYPE", "WILDCARD_PRINCIPAL", "KafkaPrincipal", "parse_principal"]

#: Kafka's ``KafkaPrincipal.USER_TYPE``.
USER_TYPE: Final = "User"


class KafkaPrincipal(NamedTuple):
    """A principal type (``User``) and name; ``str()`` gives Kafka's ``User:alice``."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


#: ``KafkaPrincipal.ANONYMOUS``: the principal of an unauthenticated connection.
ANONYMOUS: Final = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
#: ``User:*`` in an ACL matches every user principal.
WILDCARD_PRINCIPAL: Final = KafkaPrincipal(USER_TYPE, "*")


def parse_principal(text: str) -> KafkaPrincipal:
    """``SecurityUtils.parseKafkaPrincipal``: ``type:name`` split at the first colon.

    Raises:
        ValueError: no colon, or an empty type or name.
    """
    principal_type, sep, name = text.partition(":")
    if not sep or not principal_type or not name:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(principal_type, name)
