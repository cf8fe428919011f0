"""Configs of topics and brokers (an API family of :class:`~mafka.client.admin.AdminClient`).

DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: one request per
target broker carrying its resources.  A BROKER resource goes to that broker
(it alone knows its static config); every other resource to any broker.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from mafka.client.admin_core import (
    AdminCore,
    Future,
    check_list,
    code_error,
    fail,
    kafka_exception,
    new_future,
    no_duplicates,
    resolve,
)
from mafka.client.admin_types import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from mafka.client.kafka_error import KafkaError, KafkaException

__all__ = ["alter_configs", "describe_configs", "incremental_alter_configs"]

DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44


def _config_target(core: AdminCore, resource: ConfigResource) -> int | None:
    """The broker a config request for ``resource`` must go to (None: any)."""
    if resource.restype != ResourceType.BROKER or resource.name == "":
        return None
    try:
        return int(resource.name)
    except ValueError:
        raise ValueError(f"broker resource name must be a broker id, not {resource.name!r}") from None


def _config_request(core: AdminCore, api_key: int, resources: list[ConfigResource],
                    entry: Callable[[ConfigResource], dict[str, Any]],
                    extra: dict[str, Any],
                    outcome: Callable[[ConfigResource, Any], Any],
                    request_timeout: float | None) -> dict[ConfigResource, Future[Any]]:
    """One request per target broker carrying its resources; ``outcome(resource, result)``
    gives a resource's value from its entry in the response."""
    check_list(resources, "resources", ConfigResource, "ConfigResource objects")
    no_duplicates(resources, "resource")
    targets: dict[int | None, list[ConfigResource]] = defaultdict(list)
    for res in resources:
        targets[_config_target(core, res)].append(res)
    futures = {res: new_future() for res in resources}
    results_field = "results" if api_key == DESCRIBE_CONFIGS else "responses"

    async def to_target(node: int | None, group: list[ConfigResource], deadline: float | None) -> None:
        try:
            if node is not None and node not in core.kernel.metadata.brokers:
                await core.refresh()
                if node not in core.kernel.metadata.brokers:
                    for res in group:
                        fail(futures[res], KafkaException(
                            KafkaError(KafkaError._INVALID_ARG, f"broker {node} is not in the cluster")))
                    return
            body = dict(extra, resources=[entry(res) for res in group])
            response = await core.send_retrying(node, api_key, body, deadline)
        except Exception as exc:  # noqa: BLE001 - reported through the futures
            for res in group:
                fail(futures[res], kafka_exception(exc))
            return
        by_key: dict[int, dict[str, Any]] = {res.restype_int: {} for res in group}
        for result in getattr(response, results_field):
            by_key.setdefault(result.resource_type, {})[result.resource_name] = result
        for res in group:
            result = by_key[res.restype_int].get(res.name)
            if result is None:
                continue  # _guard fails it
            if result.error_code:
                fail(futures[res], code_error(result.error_code, result.error_message))
            else:
                resolve(futures[res], outcome(res, result))

    async def work(deadline: float | None) -> None:
        await asyncio.gather(*(to_target(node, group, deadline) for node, group in targets.items()))

    core.run(futures.values(), work, request_timeout)
    return futures


def describe_configs(core: AdminCore, resources: list[ConfigResource],
                     request_timeout: float | None = None) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
    """DescribeConfigs (:meth:`AdminClient.describe_configs`)."""

    def entries(_: ConfigResource, result: Any) -> dict[str, ConfigEntry]:
        out = {}
        for c in result.configs:
            synonyms = {
                s.name: ConfigEntry(s.name, s.value, source=s.source, is_synonym=True,
                                    is_sensitive=c.is_sensitive, is_read_only=c.read_only)
                for s in c.synonyms
            }
            out[c.name] = ConfigEntry(
                c.name, c.value, source=c.config_source, is_read_only=c.read_only,
                is_default=c.config_source == ConfigSource.DEFAULT_CONFIG,
                is_sensitive=c.is_sensitive, synonyms=synonyms,
            )
        return out

    return _config_request(
        core, DESCRIBE_CONFIGS, resources,
        lambda res: {"resource_type": res.restype_int, "resource_name": res.name, "configuration_keys": None},
        {"include_synonyms": True}, entries, request_timeout,
    )


def alter_configs(core: AdminCore, resources: list[ConfigResource], request_timeout: float | None = None,
                  validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
    """AlterConfigs (:meth:`AdminClient.alter_configs`)."""
    return _config_request(
        core, ALTER_CONFIGS, resources,
        lambda res: {
            "resource_type": res.restype_int, "resource_name": res.name,
            "configs": [{"name": k, "value": None if v is None else str(v)}
                        for k, v in res.set_config_dict.items()],
        },
        {"validate_only": bool(validate_only)}, lambda res, result: None, request_timeout,
    )


def incremental_alter_configs(core: AdminCore, resources: list[ConfigResource], request_timeout: float | None = None,
                              validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
    """IncrementalAlterConfigs (:meth:`AdminClient.incremental_alter_configs`)."""
    check_list(resources, "resources", ConfigResource, "ConfigResource objects")
    for res in resources:
        if not res.incremental_configs:
            raise ValueError(f"{res!r} has no incremental_configs")
        for e in res.incremental_configs:
            if not isinstance(e, ConfigEntry) or not isinstance(e.incremental_operation, AlterConfigOpType):
                raise ValueError("incremental_configs must be ConfigEntry objects with an incremental_operation")

    def entry(res: ConfigResource) -> dict[str, Any]:
        configs = []
        for e in res.incremental_configs:
            op = e.incremental_operation
            assert op is not None  # checked above
            value = None if op == AlterConfigOpType.DELETE or e.value is None else str(e.value)
            configs.append({"name": e.name, "config_operation": op.value, "value": value})
        return {"resource_type": res.restype_int, "resource_name": res.name, "configs": configs}

    return _config_request(
        core, INCREMENTAL_ALTER_CONFIGS, resources, entry,
        {"validate_only": bool(validate_only)}, lambda res, result: None, request_timeout,
    )
