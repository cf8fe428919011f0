"""DescribeClientQuotas (48, v0–1) and AlterClientQuotas (49, v0–1), KIP-546, in ZooKeeper.

Kafka 2.8 ZooKeeper-mode semantics (``KafkaApis.handleDescribeClientQuotasRequest``
/ ``handleAlterClientQuotasRequest`` over ``ZkAdminManager``); the rules
themselves (filters, entity checks, per-key types, error mapping) are
:mod:`mafka.security.quota_entities`', this module reads and writes ZooKeeper:

* Any broker answers both (Kafka 2.8 forwards nothing to the controller by default).
* Describe needs DescribeConfigs on the cluster, else a top-level
  CLUSTER_AUTHORIZATION_FAILED (message null, as ``ApiError.fromThrowable``
  of the default exception) and null ``entries``.  It reads every
  ``/config/users/<u>``, ``/config/users/<u>/clients/<c>`` and
  ``/config/clients/<c>`` and answers the entities the filter matches that
  hold a quota key; a bad filter or a failed read is the top-level error,
  entries null.
* Alter needs AlterConfigs on the cluster, else every entry of the request,
  in request order, answers CLUSTER_AUTHORIZATION_FAILED with the error's
  default message (``AlterClientQuotasRequest.getErrorResponse``).
  Otherwise each entry, in request order: its entity is checked, its stored
  config read, the ops applied; unless ``validate_only``, the config is
  validated and written through ``set_entity_config``, which posts the
  ``/config/changes`` notification every broker's quota service (and SCRAM
  cache) follows.  A user's other keys (SCRAM credentials) are kept.  One
  answer per distinct entity (Kafka collects results in a map: an entity
  named twice is altered twice and answers its last outcome), echoing the
  request's entity.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.coordination.znodes import ConfigType
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation
from mafka.security.quota_entities import (
    ClientQuotaEntity,
    alter_response_entity,
    api_error,
    apply_alteration,
    config_location,
    describe_client_quotas,
    entity_from_config_location,
    entity_to_wire,
    parse_alteration_entity,
    parse_filter,
    validate_entity_config,
)

DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49

__all__ = ["ALTER_CLIENT_QUOTAS", "DESCRIBE_CLIENT_QUOTAS", "handlers", "read_all_quota_configs"]


async def read_all_quota_configs(zk: Any) -> dict[ClientQuotaEntity, dict[str, str]]:
    """Every user, (user, client-id) and client-id entity's stored config, in that order of kinds.

    Kafka's ``fetchAllEntityConfigs(users)``, ``fetchAllChildEntityConfigs(users, clients)``
    and ``fetchAllEntityConfigs(clients)``; names as ZooKeeper lists them (sorted).
    """
    users = ConfigType.USER
    clients = ConfigType.CLIENT
    out: dict[ClientQuotaEntity, dict[str, str]] = {}
    user_names = await zk.get_all_entities_with_config(users)
    for user in user_names:
        out[entity_from_config_location(users, user)] = dict(await zk.get_entity_config(users, user))
    for user in user_names:
        for client in await zk.get_all_entities_with_config(f"{users}/{user}/{clients}"):
            name = f"{user}/{clients}/{client}"
            out[entity_from_config_location(users, name)] = dict(await zk.get_entity_config(users, name))
    for client in await zk.get_all_entities_with_config(clients):
        out[entity_from_config_location(clients, client)] = dict(await zk.get_entity_config(clients, client))
    return out


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    async def describe(request: Any, connection: Any) -> dict[str, Any]:
        if not authz.allows_cluster(connection, AclOperation.DESCRIBE_CONFIGS):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "error_message": None, "entries": None}
        body = request.body
        try:
            quota_filter = parse_filter(((c.entity_type, c.match_type, c.match) for c in body.components),
                                        body.strict)
            found = describe_client_quotas(quota_filter, await read_all_quota_configs(broker.zk))
        except Exception as exc:  # noqa: BLE001 - a top-level error, as Kafka's handleError
            code, message = api_error(exc)
            return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}
        entries = [
            {"entity": entity_to_wire(entity), "values": [{"key": k, "value": v} for k, v in values.items()]}
            for entity, values in found
        ]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "entries": entries}

    async def alter_one(entry: Any, validate_only: bool) -> tuple[int, str | None]:
        try:
            entity = parse_alteration_entity([(e.entity_type, e.entity_name) for e in entry.entity])
            entity_type, name = config_location(entity)
            stored = await broker.zk.get_entity_config(entity_type, name)
            config = apply_alteration(entity, stored, [(op.key, None if op.remove else op.value)
                                                       for op in entry.ops])
        except Exception as exc:  # noqa: BLE001 - this entry's error
            return api_error(exc)
        if validate_only:
            return int(ErrorCode.NONE), None
        try:
            validate_entity_config(entity, config)
        except Exception:  # noqa: BLE001 - Kafka's ConfigException/IllegalArgumentException: not an ApiException
            return int(ErrorCode.UNKNOWN_SERVER_ERROR), None
        try:
            await broker.zk.set_entity_config(entity_type, name, config)
        except Exception as exc:  # noqa: BLE001 - this entry's error
            return api_error(exc)
        return int(ErrorCode.NONE), None

    async def alter(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        if not authz.allows_cluster(connection, AclOperation.ALTER_CONFIGS):
            refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return {"throttle_time_ms": 0, "entries": [
                {"error_code": refused, "error_message": refused.description,
                 "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
                for entry in body.entries
            ]}
        results: dict[frozenset[tuple[str, str | None]], dict[str, Any]] = {}
        for entry in body.entries:
            pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
            code, message = await alter_one(entry, body.validate_only)
            # Kafka's result map is keyed by the request's entity (a map of type to name: last name wins).
            results[frozenset(dict(pairs).items())] = {
                "error_code": code, "error_message": message, "entity": alter_response_entity(pairs)}
        return {"throttle_time_ms": 0, "entries": list(results.values())}

    return {
        DESCRIBE_CLIENT_QUOTAS: lambda request, connection: defer.ensureDeferred(describe(request, connection)),
        ALTER_CLIENT_QUOTAS: lambda request, connection: defer.ensureDeferred(alter(request, connection)),
    }
