"""DescribeUserScramCredentials (50, v0) and AlterUserScramCredentials (51, v0), KIP-554, in ZooKeeper.

Kafka 2.8 ZooKeeper-mode semantics (``ZkAdminManager.describeUserScramCredentials``
/ ``alterUserScramCredentials``, ``AdminZkClient.changeConfigs``):

* Credentials live in ``/config/users/<sanitized user>`` as
  ``{"version":1,"config":{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=…"}}``
  (format and name encoding in :mod:`mafka.broker.scram`); every change is
  announced by a ``/config/changes/config_change_N`` notification
  ``{"version":2,"entity_path":"users/<sanitized user>"}``.  Other keys of
  the user's config (quotas) are kept.
* Describe: null or no users means every user with a credential, sorted by
  name; named users come back once each, in request order: an empty name or
  one without credentials is RESOURCE_NOT_FOUND, a name given twice
  DUPLICATE_RESOURCE.  Any broker answers.
* Alter: only the active controller answers (Kafka 2.8 forwards nothing):
  elsewhere every user named gets NOT_CONTROLLER, and clients retry at the
  controller.  Per user, checked in Kafka's order: an empty name or
  iterations outside 4096..16384 is UNACCEPTABLE_CREDENTIAL, an unknown
  mechanism UNSUPPORTED_SASL_MECHANISM; the same user and mechanism twice in
  one request DUPLICATE_RESOURCE; deleting a credential that does not exist
  RESOURCE_NOT_FOUND.  A user with any such error is left untouched; the
  others have their deletions and upsertions applied and written, one
  ZooKeeper write (and notification) per user.
* ACLs (Kafka 2.8): Describe needs Describe on the cluster, else a top-level
  CLUSTER_AUTHORIZATION_FAILED and no results; Alter (after NOT_CONTROLLER,
  as in Kafka) needs Alter on the cluster, else every user named answers
  CLUSTER_AUTHORIZATION_FAILED and nothing is written.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, overload

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    ScramMechanism,
    credential_from_string,
    credential_to_string,
    desanitize,
    generate_credential,
    sanitize,
)
from mafka.coordination.znodes import ConfigType
from mafka.errors import ErrorCode, KafkaError
from mafka.security.acl import AclOperation

DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51

_EMPTY_USER = "Username must not be empty"
_NO_SUCH_CREDENTIAL = "Attempt to describe a user credential that does not exist"
_UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"


def _error_of(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, KafkaError):
        return int(exc.code), exc.message or exc.code.description
    return int(ErrorCode.UNKNOWN_SERVER_ERROR), ErrorCode.UNKNOWN_SERVER_ERROR.description


def _result(user: str, code: int = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message}


@overload
def describe_user(user: str, config: dict[str, str], explicit: Literal[True]) -> dict[str, Any]: ...
@overload
def describe_user(user: str, config: dict[str, str], explicit: bool) -> dict[str, Any] | None: ...
def describe_user(user: str, config: dict[str, str], explicit: bool) -> dict[str, Any] | None:
    """The describe result for *user*'s config; None when it has no credential and was not named."""
    present = [m for m in MECHANISMS if m.mechanism_name in config]
    if not present:
        if not explicit:
            return None
        return {
            **_result(user, ErrorCode.RESOURCE_NOT_FOUND, f"{_NO_SUCH_CREDENTIAL}: {user}"),
            "credential_infos": [],
        }
    try:
        infos = [
            {
                "mechanism": int(m),
                "iterations": credential_from_string(config[m.mechanism_name]).iterations,
            }
            for m in present
        ]
    except ValueError:  # bad data in ZooKeeper
        code = ErrorCode.UNKNOWN_SERVER_ERROR
        return {**_result(user, code, code.description), "credential_infos": []}
    return {**_result(user), "credential_infos": infos}


def plan_alterations(
    deletions: list[Any], upsertions: list[Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Kafka's request checks: (results for the users refused, the users that may be altered, in order)."""
    refused: dict[str, tuple[int, str]] = {}
    for d in deletions:
        if d.name == "":
            refused[d.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY_USER)
        elif ScramMechanism.from_type(d.mechanism) is ScramMechanism.UNKNOWN:
            refused[d.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECHANISM)
    for u in upsertions:  # an upsertion's reason wins over a deletion's, as Kafka's map union
        mechanism = ScramMechanism.from_type(u.mechanism)
        if u.name == "":
            refused[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, _EMPTY_USER)
        elif mechanism is ScramMechanism.UNKNOWN:
            refused[u.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, _UNKNOWN_MECHANISM)
        elif u.iterations < mechanism.min_iterations:
            refused[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            refused[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    results = [_result(user, code, message) for user, (code, message) in refused.items()]
    pairs = [(a.name, a.mechanism) for a in (*upsertions, *deletions) if a.name not in refused]
    counts = Counter(pairs)
    duplicated = list(
        dict.fromkeys(user for user, mechanism in pairs if counts[(user, mechanism)] > 1)
    )
    results += [
        _result(
            user,
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
        for user in duplicated
    ]
    valid = [user for user in dict.fromkeys(user for user, _ in pairs) if user not in duplicated]
    return results, valid


def apply_alterations(
    config: dict[str, str], user: str, deletions: list[Any], upsertions: list[Any]
) -> None:
    """*user*'s deletions, then upsertions (stored and server keys derived here), applied to *config*."""
    for d in deletions:
        if d.name == user:
            config.pop(ScramMechanism.from_type(d.mechanism).mechanism_name, None)
    for u in upsertions:
        if u.name == user:
            mechanism = ScramMechanism.from_type(u.mechanism)
            credential = generate_credential(
                mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations
            )
            config[mechanism.mechanism_name] = credential_to_string(credential)


def handlers(broker: Any) -> dict[int, Any]:
    users_type = ConfigType.USER
    authz = AdminAuthz(broker)

    @defer.inlineCallbacks
    def describe(request: Any, connection: Any) -> Any:
        if not authz.allows_cluster(connection, AclOperation.DESCRIBE):
            refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return {"throttle_time_ms": 0, "error_code": refused, "error_message": refused.description, "results": []}
        names = None if not request.body.users else [u.name for u in request.body.users]
        results: dict[str, dict[str, Any]] = {}
        try:
            if names is None:
                for sanitized in (yield broker.zk.get_all_entities_with_config(users_type)):
                    user = desanitize(sanitized)
                    config = yield broker.zk.get_entity_config(users_type, sanitized)
                    found = describe_user(user, config, explicit=False)
                    if found is not None:
                        results[user] = found
                ordered = [results[user] for user in sorted(results)]
            else:
                counts = Counter(names)
                for name in dict.fromkeys(names):
                    if name == "":
                        found = {
                            **_result(name, ErrorCode.RESOURCE_NOT_FOUND, _EMPTY_USER),
                            "credential_infos": [],
                        }
                    elif counts[name] > 1:
                        message = f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                        found = {
                            **_result(name, ErrorCode.DUPLICATE_RESOURCE, message),
                            "credential_infos": [],
                        }
                    else:
                        try:
                            config = yield broker.zk.get_entity_config(users_type, sanitize(name))
                            found = describe_user(name, config, explicit=True)
                        except Exception as exc:  # noqa: BLE001 - reported per user
                            code, message = _error_of(exc)
                            found = {**_result(name, code, message), "credential_infos": []}
                    results[name] = found
                ordered = list(results.values())
        except Exception as exc:  # noqa: BLE001 - listing the users failed: a top-level error
            code, message = _error_of(exc)
            return {
                "throttle_time_ms": 0,
                "error_code": code,
                "error_message": message,
                "results": [],
            }
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "results": ordered,
        }

    @defer.inlineCallbacks
    def alter(request: Any, connection: Any) -> Any:
        body = request.body
        deletions, upsertions = list(body.deletions), list(body.upsertions)
        controller = getattr(broker, "controller", None)
        if controller is None or not controller.is_active:
            refusal = ErrorCode.NOT_CONTROLLER
        elif not authz.allows_cluster(connection, AclOperation.ALTER):
            refusal = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            refusal = None
        if refusal is not None:
            # Kafka's getErrorResponse: every user named, once, sorted.
            users = sorted({a.name for a in (*deletions, *upsertions)})
            return {
                "throttle_time_ms": 0,
                "results": [_result(user, refusal, refusal.description) for user in users],
            }
        results, valid = plan_alterations(deletions, upsertions)
        configs: dict[str, dict[str, str]] = {}
        failed: list[dict[str, Any]] = []
        for user in valid:
            try:
                configs[user] = dict(
                    (yield broker.zk.get_entity_config(users_type, sanitize(user)))
                )
            except Exception as exc:  # noqa: BLE001 - reported per user
                failed.append(_result(user, *_error_of(exc)))
        missing = [
            d.name
            for d in deletions
            if d.name in configs
            and ScramMechanism.from_type(d.mechanism).mechanism_name not in configs[d.name]
        ]
        for user in dict.fromkeys(missing):
            del configs[user]
            results.append(
                _result(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            )
        done = []
        for user, config in configs.items():
            try:
                apply_alterations(config, user, deletions, upsertions)
                yield broker.zk.set_entity_config(users_type, sanitize(user), config)
                done.append(_result(user))
            except Exception as exc:  # noqa: BLE001 - reported per user
                failed.append(_result(user, *_error_of(exc)))
        return {"throttle_time_ms": 0, "results": results + failed + done}

    return {DESCRIBE_USER_SCRAM_CREDENTIALS: describe, ALTER_USER_SCRAM_CREDENTIALS: alter}
