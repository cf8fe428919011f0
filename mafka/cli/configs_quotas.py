"""``mafka configs`` for client quotas: DescribeClientQuotas / AlterClientQuotas, printed as kafka-configs.sh does.

Owns the quota half of ``--entity-type users|clients`` (and their pairs) on
the ``--bootstrap-server`` path: the ``ClientQuotaFilter`` a describe sends,
the alteration an ``--alter`` sends, and Kafka's output texts in the order
Kafka's Java admin client hands the entities to the tool (rebuilt
``java.util.HashMap`` iteration orders).  SCRAM credentials, the other half of
``users``, and everything else stay in :mod:`mafka.cli.configs`, which calls
:func:`describe_quotas` and :func:`alter_quotas`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from mafka.cli.configs import (
    ALTER_CLIENT_QUOTAS,
    CLIENTS,
    DESCRIBE_CLIENT_QUOTAS,
    IPS,
    USERS,
    ConfigCommandError,
    _admin,
    _broker_failure,
    _java_string_hash,
    java_hash_order,
)
from mafka.security.quota_entities import java_double_to_string, java_parse_double

__all__ = ["alter_quotas", "describe_quotas"]


#: ``ClientQuotaEntity`` entity types, by ``--entity-type``.
_QUOTA_ENTITY_TYPES = {USERS: "user", CLIENTS: "client-id", IPS: "ip"}
_QUOTA_ENTITY_NAMES = (("user", "user-principal"), ("client-id", "client-id"), ("ip", "ip"))


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two a ``new HashMap<>(capacity)`` starts with (at least 1)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


def _java_hash_map_order(items: list[tuple[Any, int]], initial_capacity: int) -> list[Any]:
    """The keys of ``(key, hashCode)`` pairs in the iteration order of a ``new HashMap<>(initial_capacity)``.

    The table starts at ``tableSizeFor(initial_capacity)`` and doubles each
    time a put takes the size past ¾ of it; a bucket keeps insertion order.
    """
    capacity = _table_size_for(initial_capacity)
    threshold = int(capacity * 0.75)
    for size in range(1, len(items) + 1):
        if size > threshold:
            capacity *= 2
            threshold = int(capacity * 0.75)

    def bucket(item: tuple[int, tuple[Any, int]]) -> tuple[int, int]:
        h = item[1][1] & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1), item[0]

    return [key for _, (key, _) in sorted(enumerate(items), key=bucket)]


def _entity_hash(entity: Mapping[str, str | None]) -> int:
    """``ClientQuotaEntity.hashCode``: ``Objects.hash(entries)``, a map's hash being Σ key ^ value."""
    entries = sum(_java_string_hash(k) ^ (0 if v is None else _java_string_hash(v)) for k, v in entity.items())
    return (31 + entries) & 0xFFFFFFFF


def _quota_components(types: list[str], names: list[str]) -> list[dict[str, Any]]:
    """Kafka's ``getAllClientQuotasConfigs`` filter: types zipped with names (a missing name: any entity of the type)."""
    if len(names) > len(types):
        raise ConfigCommandError("More entity names specified than entity types")
    components = []
    for i, entity_type in enumerate(types):
        kind = _QUOTA_ENTITY_TYPES.get(entity_type)
        if kind is None:
            raise ConfigCommandError(f"Unexpected entity type {entity_type}")
        if i >= len(names):
            components.append({"entity_type": kind, "match_type": 2, "match": None})  # ofEntityType
        elif names[i] == "":
            components.append({"entity_type": kind, "match_type": 1, "match": None})  # ofDefaultEntity
        else:
            components.append({"entity_type": kind, "match_type": 0, "match": names[i]})  # ofEntity
    return components


def _client_quotas(args: argparse.Namespace, types: list[str],
                   names: list[str]) -> list[tuple[dict[str, str | None], list[tuple[str, float]]]]:
    """DescribeClientQuotas with ``ClientQuotaFilter.containsOnly`` of the entities given.

    Returns (entity, values) in the order Kafka's admin client hands them to
    the tool: the response rebuilt as ``HashMap`` s (entities, and each one's values).
    """
    response = _admin(args, DESCRIBE_CLIENT_QUOTAS,
                      {"components": _quota_components(types, names), "strict": True})
    if response.error_code:
        raise _broker_failure(response.error_code, response.error_message)
    entries = list(response.entries or [])
    results = []
    for entry in entries:
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        values = {v.key: v.value for v in entry["values"]}
        ordered = _java_hash_map_order([(k, _java_string_hash(k)) for k in values], len(values))
        results.append((entity, [(k, values[k]) for k in ordered]))
    return _java_hash_map_order([(r, _entity_hash(r[0])) for r in results], len(entries))


def describe_quotas(args: argparse.Namespace, types: list[str], names: list[str]) -> None:
    """Kafka's ``describeQuotaConfigs``: ``Quota configs for user-principal 'u', client-id 'c' are k=v, …``."""
    for entity, values in _client_quotas(args, types, names):
        parts = []
        for kind, text in _QUOTA_ENTITY_NAMES:
            if kind in entity:
                name = entity[kind]
                parts.append(f"{text} '{name}'" if name is not None else f"the default {text}")
        shown = ", ".join(f"{k}={java_double_to_string(v)}" for k, v in values)
        print(f"Quota configs for {', '.join(parts)} are {shown}")


def alter_quotas(args: argparse.Namespace, types: list[str], names: list[str], added: dict[str, str],
                  deleted: list[str]) -> None:
    """Kafka's ``alterQuotaConfigs``: the deletions checked against the entity's quotas, then AlterClientQuotas."""
    if len(types) != len(names):
        raise ConfigCommandError("Exactly one entity name must be specified for every entity type")
    found = _client_quotas(args, types, names)
    old = dict(found[0][1]) if found else {}
    invalid = [k for k in deleted if k not in old]
    if invalid:
        raise ConfigCommandError(f"Invalid config(s): {','.join(invalid)}")
    # Kafka builds the entity in a java.util.HashMap (a default's name is null).
    entity = {_QUOTA_ENTITY_TYPES[t]: (n or None) for t, n in zip(types, names, strict=True)}
    ops = []
    for key, text in added.items():
        try:
            value = java_parse_double(text)
        except ValueError:
            raise ConfigCommandError(f"Cannot parse quota configuration value for {key}: {text}") from None
        ops.append({"key": key, "value": value, "remove": False})
    ops += [{"key": key, "value": 0.0, "remove": True} for key in deleted]
    body = {"entries": [{"entity": [{"entity_type": k, "entity_name": entity[k]} for k in java_hash_order(entity)],
                         "ops": ops}],
            "validate_only": False}
    response = _admin(args, ALTER_CLIENT_QUOTAS, body)
    for result in response.entries:
        if result.error_code:
            raise _broker_failure(result.error_code, result.error_message)
