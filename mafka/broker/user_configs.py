"""The ``/config/users`` entities every broker keeps in memory: SCRAM credentials (and quotas).

Kafka's ``CredentialCache`` fed by ``UserConfigHandler``: all users are
read when the broker starts (:meth:`UserConfigCache.load`), and a user is
read again when a ``/config/changes`` notification names ``users/<user>``
(:meth:`UserConfigCache.changed`, called by
:class:`~mafka.broker.topic_configs.TopicConfigManager`, which processes
the notifications).  A credential created or changed with
``mafka configs --alter --entity-type users`` or AlterUserScramCredentials
is therefore usable on every broker as soon as the notification is seen.

ZooKeeper is read on the reactor through :class:`KafkaZkClient` (its calls
are asynchronous); lookups (:meth:`scram_credential`) are dict reads, safe
on the per-connection path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from mafka.broker.scram import (
    ScramCredential,
    ScramMechanism,
    credential_from_string,
    desanitize,
    sanitize,
)

__all__ = ["UserConfigCache"]

log = logging.getLogger("mafka.broker.user_configs")


class UserConfigCache:
    """Every user's dynamic config (``/config/users/<sanitized user>``), by user name.

    Args:
        zk: the broker's :class:`~mafka.coordination.kafka_zk.client.KafkaZkClient`.
        on_change: called with ``(entity_path, config)`` after an entity was (re)read
            (the quota manager listens here).
    """

    def __init__(self, zk: Any, on_change: Callable[[str, Mapping[str, str]], None] | None = None) -> None:
        self.zk = zk
        self.on_change = on_change
        self.users: dict[str, dict[str, str]] = {}
        self._credentials: dict[tuple[ScramMechanism, str], ScramCredential] = {}

    def scram_credential(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        """The user's credential for *mechanism*, or None (unknown user, or none for that mechanism)."""
        return self._credentials.get((mechanism, user))

    @defer.inlineCallbacks
    def load(self) -> Any:
        """Reads every user entity."""
        names = yield self.zk.get_all_entities_with_config("users")
        for name in names:
            yield self._read(name)

    @defer.inlineCallbacks
    def changed(self, entity_path: str) -> Any:
        """Re-reads the user of a ``users/<u>`` notification (``users/<u>/clients/<c>`` holds no credential)."""
        parts = entity_path.split("/")
        if len(parts) == 2 and parts[0] == "users" and parts[1]:
            yield self._read(parts[1])

    @defer.inlineCallbacks
    def _read(self, sanitized: str) -> Any:
        config = yield self.zk.get_entity_config("users", sanitized)
        user = desanitize(sanitized)
        self.users[user] = dict(config)
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            value = config.get(mechanism.mechanism_name)
            key = (mechanism, user)
            if value is None:
                self._credentials.pop(key, None)
                continue
            try:
                self._credentials[key] = credential_from_string(value)
            except ValueError as exc:
                log.warning("ignoring the %s credential of user %s: %s", mechanism.mechanism_name, user, exc)
                self._credentials.pop(key, None)
        if self.on_change is not None:
            self.on_change(f"users/{sanitize(user)}", self.users[user])
