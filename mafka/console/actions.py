"""The console's changes, each in two steps: a :class:`Plan` shown for confirmation, then its execution.

:meth:`Actions.plan` reads a submitted form, checks it against the cluster (asking the
brokers to validate where Kafka's API can: ``validate_only`` for CreateTopics and
IncrementalAlterConfigs) and describes exactly what will happen — for an offset reset the
dry run, old → new offset per partition, as ``kafka-consumer-groups --reset-offsets
--dry-run``.  :meth:`Actions.execute` then does exactly that plan (the offsets shown are the
offsets committed; nothing is recomputed) and reports each part's outcome by Kafka's error
name (``NONE`` for success).

The kinds (:data:`KINDS`): ``create-topic``, ``add-partitions``, ``alter-config``,
``reset-offsets``, ``elect-leaders`` (preferred), ``cancel-delayed`` (MafkaEndHalf with
commit false at the partition's leader, as ``mafka delayed --cancel``).

A form that does not parse raises :class:`FormError` (shown on the form's page); a cluster
that refuses a plan's reads raises :class:`~mafka.console.errors.ConsoleError`.  A plan the
cluster would refuse as it stands (a reset of a group with members) is returned with
``blocked`` set: the confirm page shows why and offers no confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mafka.client.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConsumerGroupTopicPartitions,
    ElectionType,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from mafka.client.message import TopicPartition

from .browse import parse_timestamp
from .cluster import ClusterReader
from .errors import ConsoleError, code_name, error_name
from .wire import MAFKA_CHANNEL, MAFKA_END_HALF, Call

__all__ = ["Actions", "FormError", "Outcome", "Plan", "KINDS", "RESET_STRATEGIES", "parse_configs"]

KINDS = ("create-topic", "add-partitions", "alter-config", "reset-offsets", "elect-leaders", "cancel-delayed")
#: kafka-consumer-groups' reset scenarios the console offers
RESET_STRATEGIES = ("to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime")
_INACTIVE = ("Empty", "Dead")


class FormError(ValueError):
    """A form field that does not parse; the message names it."""


@dataclass
class Plan:
    """What an action will do: ``lines`` in words, an optional ``table`` (``head`` and
    ``rows``), and ``params``, the exact arguments :meth:`Actions.execute` uses."""

    kind: str
    title: str
    lines: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    blocked: str | None = None


@dataclass
class Outcome:
    """What happened: one (what, Kafka's error name) per part; ``ok`` when all are ``NONE``."""

    title: str
    results: list[tuple[str, str]] = field(default_factory=list)
    #: the names that count as success (a preferred election also takes ELECTION_NOT_NEEDED)
    fine: tuple[str, ...] = ("NONE",)

    @property
    def ok(self) -> bool:
        return all(name in self.fine for _, name in self.results)


def _text(form: Mapping[str, str], name: str, required: bool = True) -> str:
    value = (form.get(name) or "").strip()
    if required and not value:
        raise FormError(f"{name.replace('_', ' ')} is required")
    return value


def _int(form: Mapping[str, str], name: str, lo: int | None = None, required: bool = True) -> int | None:
    value = _text(form, name, required)
    if not value:
        return None
    try:
        n = int(value, 10)
    except ValueError:
        raise FormError(f"{name.replace('_', ' ')} must be an integer, not {value!r}") from None
    if lo is not None and n < lo:
        raise FormError(f"{name.replace('_', ' ')} must be at least {lo}")
    return n


def parse_configs(text: str) -> dict[str, str]:
    """``key=value`` lines (blank lines skipped) → dict.

    Raises:
        FormError: a line without ``=``.
    """
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise FormError(f"config line {line!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


class Actions:
    """Plans and executes the console's changes over a :class:`ClusterReader`'s clients."""

    def __init__(self, reader: ClusterReader) -> None:
        self.reader = reader
        self.admin = reader.admin
        self.timeout = reader.timeout

    def plan(self, kind: str, form: Mapping[str, str]) -> Plan:
        """The plan for a submitted form (see the module docstring).

        Raises:
            FormError: an unknown kind or a field that does not parse.
            ConsoleError: a read the plan needs failed.
        """
        planner = {
            "create-topic": self._plan_create_topic,
            "add-partitions": self._plan_add_partitions,
            "alter-config": self._plan_alter_config,
            "reset-offsets": self._plan_reset_offsets,
            "elect-leaders": self._plan_elect_leaders,
            "cancel-delayed": self._plan_cancel_delayed,
        }.get(kind)
        if planner is None:
            raise FormError(f"no such action: {kind!r}")
        return planner(form)

    def execute(self, plan: Plan) -> Outcome:
        """Carries ``plan`` out; never raises for the cluster's refusal (it is in the outcome)."""
        run = {
            "create-topic": self._create_topic,
            "add-partitions": self._add_partitions,
            "alter-config": self._alter_config,
            "reset-offsets": self._reset_offsets,
            "elect-leaders": self._elect_leaders,
            "cancel-delayed": self._cancel_delayed,
        }[plan.kind]
        try:
            return run(plan)
        except ConsoleError as exc:
            return Outcome(plan.title, [(exc.detail or plan.title, exc.name)])

    def _wait(self, future: Any) -> str:
        """A future's outcome as Kafka's error name (``NONE`` if it succeeded)."""
        try:
            future.result(self.timeout + 1.0)
        except Exception as exc:  # noqa: BLE001
            return error_name(exc)
        return "NONE"

    # -- create topic ----------------------------------------------------------------------

    def _plan_create_topic(self, form: Mapping[str, str]) -> Plan:
        topic = _text(form, "topic")
        partitions = _int(form, "partitions", 1, required=False)
        rf = _int(form, "replication_factor", 1, required=False)
        configs = parse_configs(form.get("configs") or "")
        plan = Plan("create-topic", f"Create topic {topic}")
        plan.lines.append(f"Create topic {topic!r} with "
                          f"{partitions if partitions is not None else 'the brokers default number of'} partition(s), "
                          f"replication factor {rf if rf is not None else '(the brokers default)'}.")
        plan.lines += [f"Topic config {k}={v}" for k, v in sorted(configs.items())]
        plan.params = {"topic": topic, "partitions": partitions if partitions is not None else -1,
                       "rf": rf if rf is not None else -1, "configs": configs}
        # The controller checks it all now (name, counts, configs, existence) without creating it.
        check = self._new_topics(plan, validate_only=True)
        if check != "NONE":
            plan.blocked = f"The controller refuses it: {check}"
        return plan

    def _new_topics(self, plan: Plan, validate_only: bool) -> str:
        p = plan.params
        futures = self.admin.create_topics([NewTopic(p["topic"], p["partitions"], p["rf"], config=p["configs"])],
                                           operation_timeout=self.timeout, request_timeout=self.timeout,
                                           validate_only=validate_only)
        return self._wait(futures[p["topic"]])

    def _create_topic(self, plan: Plan) -> Outcome:
        return Outcome(plan.title, [(f"CreateTopics {plan.params['topic']}", self._new_topics(plan, False))])

    # -- add partitions --------------------------------------------------------------------

    def _plan_add_partitions(self, form: Mapping[str, str]) -> Plan:
        topic = _text(form, "topic")
        total = _int(form, "partitions", 1)
        assert total is not None
        current = len(self._topic(topic).partitions)
        plan = Plan("add-partitions", f"Add partitions to {topic}", params={"topic": topic, "total": total})
        if total <= current:
            plan.blocked = (f"INVALID_PARTITIONS: topic {topic!r} has {current} partition(s); "
                            f"the new count must be larger")
        else:
            added = f"partition {current}" if total == current + 1 else f"partitions {current} to {total - 1}"
            plan.lines.append(f"Grow topic {topic!r} from {current} to {total} partitions (new {added}).")
            plan.lines.append("Records with keys may map to other partitions afterwards.")
        return plan

    def _topic(self, topic: str) -> Any:
        md = self.reader.metadata(topic)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise ConsoleError(t.error.name() if t is not None and t.error is not None
                               else "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic!r}")
        return t

    def _add_partitions(self, plan: Plan) -> Outcome:
        p = plan.params
        futures = self.admin.create_partitions([NewPartitions(p["topic"], p["total"])],
                                               operation_timeout=self.timeout, request_timeout=self.timeout)
        return Outcome(plan.title, [(f"CreatePartitions {p['topic']} to {p['total']}", self._wait(futures[p["topic"]]))])

    # -- alter a topic config --------------------------------------------------------------

    def _plan_alter_config(self, form: Mapping[str, str]) -> Plan:
        topic = _text(form, "topic")
        name = _text(form, "name")
        op = (form.get("op") or "set").lower()
        if op not in ("set", "delete"):
            raise FormError("op must be set or delete")
        value = _text(form, "value", required=op == "set")
        rows = self.reader.configs(ConfigResource(ResourceType.TOPIC, topic))
        current = next((r for r in rows if r.name == name), None)
        before = "(not set)" if current is None else (
            "(sensitive)" if current.is_sensitive else f"{current.value} ({current.source})")
        plan = Plan("alter-config", f"Alter config {name} of topic {topic}",
                    params={"topic": topic, "name": name, "value": value, "op": op})
        if op == "set":
            plan.lines.append(f"Set {name} of topic {topic!r}: {before} → {value}")
        else:
            plan.lines.append(f"Delete the override of {name} of topic {topic!r}: {before} → the broker's default")
        check = self._alter(plan, validate_only=True)
        if check != "NONE":
            plan.blocked = f"The brokers refuse it: {check}"
        return plan

    def _alter(self, plan: Plan, validate_only: bool) -> str:
        p = plan.params
        op = AlterConfigOpType.SET if p["op"] == "set" else AlterConfigOpType.DELETE
        resource = ConfigResource(ResourceType.TOPIC, p["topic"], incremental_configs=[
            ConfigEntry(p["name"], p["value"] if p["op"] == "set" else None, incremental_operation=op)])
        futures = self.admin.incremental_alter_configs([resource], request_timeout=self.timeout,
                                                       validate_only=validate_only)
        return self._wait(next(iter(futures.values())))

    def _alter_config(self, plan: Plan) -> Outcome:
        p = plan.params
        return Outcome(plan.title, [(f"IncrementalAlterConfigs {p['topic']} {p['name']}", self._alter(plan, False))])

    # -- reset a group's offsets -----------------------------------------------------------

    def _plan_reset_offsets(self, form: Mapping[str, str]) -> Plan:
        group = _text(form, "group")
        topic = _text(form, "topic", required=False)
        strategy = _text(form, "strategy")
        if strategy not in RESET_STRATEGIES:
            raise FormError(f"strategy must be one of {', '.join(RESET_STRATEGIES)}")
        value = _text(form, "value", required=strategy in ("to-offset", "shift-by", "to-datetime"))
        plan = Plan("reset-offsets", f"Reset offsets of group {group}",
                    head=["GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"])
        described = self.reader.result(self.admin.describe_groups([group], request_timeout=self.timeout)[group],
                                       "DescribeGroups")
        state = described.state or "Unknown"
        committed = self.reader.committed([group])[group]
        if topic:
            tps = [(topic, p) for p in sorted(self._topic(topic).partitions)]
        else:
            tps = sorted(committed)
        if not tps:
            raise FormError(f"group {group!r} has no committed offsets; name a topic to reset")
        new = self._new_offsets(strategy, value, tps, committed)
        plan.rows = [[group, t, str(p), str(committed[(t, p)]) if (t, p) in committed else "-", str(new[(t, p)])]
                     for t, p in tps]
        plan.params = {"group": group, "offsets": [[t, p, new[(t, p)]] for t, p in tps]}
        plan.lines.append(f"Commit these offsets for group {group!r} ({strategy}{' ' + value if value else ''}; "
                          f"dry run shown: nothing is changed until you confirm).")
        if state not in _INACTIVE:
            plan.blocked = (f"Assignments can only be reset if the group '{group}' is inactive, "
                            f"but the current state is {state}.")
        return plan

    def _new_offsets(self, strategy: str, value: str, tps: list[tuple[str, int]],
                     committed: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Kafka's ``prepareOffsetsToReset`` for the console's strategies (clamped to the log's range)."""
        def listed(spec: OffsetSpec, what: str, only: list[tuple[str, int]] | None = None) -> dict[tuple[str, int], int]:
            wanted = tps if only is None else only
            found, failed = self.reader.offsets(wanted, spec, what)
            if failed or any(tp not in found for tp in wanted):
                raise ConsoleError(failed.split(" ", 1)[0] if failed else "UNKNOWN_TOPIC_OR_PARTITION",
                                   f"Error getting {what} of topic partitions")
            return found

        if strategy == "to-earliest":
            return listed(OffsetSpec.earliest(), "starting offset")
        if strategy == "to-latest":
            return listed(OffsetSpec.latest(), "ending offset")
        if strategy == "to-datetime":
            try:
                ts = parse_timestamp(value)
            except ValueError as exc:
                raise FormError(str(exc)) from None
            found = listed(OffsetSpec.for_timestamp(ts), "offset by timestamp")
            missing = [tp for tp, off in found.items() if off < 0]
            if missing:
                found.update(listed(OffsetSpec.latest(), "ending offset", missing))
            return found
        try:
            n = int(value, 10)
        except ValueError:
            raise FormError(f"value must be an integer for {strategy}, not {value!r}") from None
        if strategy == "to-offset":
            requested = dict.fromkeys(tps, n)
        else:
            lacking = [tp for tp in tps if tp not in committed]
            if lacking:
                t, p = lacking[0]
                raise FormError(f"Cannot shift offset for partition {t}-{p} since there is no current committed offset")
            requested = {tp: committed[tp] + n for tp in tps}
        starts = listed(OffsetSpec.earliest(), "starting offset")
        ends = listed(OffsetSpec.latest(), "ending offset")
        return {tp: min(max(off, starts[tp]), ends[tp]) for tp, off in requested.items()}

    def _reset_offsets(self, plan: Plan) -> Outcome:
        group = plan.params["group"]
        offsets = [TopicPartition(t, p, off) for t, p, off in plan.params["offsets"]]
        futures = self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)],
                                                          request_timeout=self.timeout)
        try:
            result = futures[group].result(self.timeout + 1.0)
        except Exception as exc:  # noqa: BLE001
            return Outcome(plan.title, [(f"OffsetCommit {group}", error_name(exc))])
        return Outcome(plan.title, [
            (f"{tp.topic}-{tp.partition} → {tp.offset}", "NONE" if tp.error is None else tp.error.name())
            for tp in result.topic_partitions or []])

    # -- preferred leader election ---------------------------------------------------------

    def _plan_elect_leaders(self, form: Mapping[str, str]) -> Plan:
        topic = _text(form, "topic")
        partition = _int(form, "partition", 0, required=False)
        t = self._topic(topic)
        chosen = sorted(t.partitions) if partition is None else [partition]
        if partition is not None and partition not in t.partitions:
            raise ConsoleError("UNKNOWN_TOPIC_OR_PARTITION", f"partition {topic}-{partition}")
        plan = Plan("elect-leaders", f"Preferred leader election for {topic}",
                    head=["PARTITION", "LEADER NOW", "PREFERRED LEADER", "EXPECTED"],
                    params={"topic": topic, "partitions": chosen})
        for p in chosen:
            info = t.partitions[p]
            preferred = info.replicas[0] if info.replicas else -1
            expected = ("ELECTION_NOT_NEEDED" if info.leader == preferred else
                        "elected" if preferred in info.isrs else "PREFERRED_LEADER_NOT_AVAILABLE")
            plan.rows.append([f"{topic}-{p}", str(info.leader), str(preferred), expected])
        plan.lines.append(f"Ask the controller to make each partition's preferred replica its leader "
                          f"({len(chosen)} partition(s)).")
        return plan

    def _elect_leaders(self, plan: Plan) -> Outcome:
        topic = plan.params["topic"]
        tps = [TopicPartition(topic, p) for p in plan.params["partitions"]]
        future = self.admin.elect_leaders(ElectionType.PREFERRED, tps, request_timeout=self.timeout,
                                          operation_timeout=self.timeout)
        try:
            result = future.result(self.timeout + 1.0)
        except Exception as exc:  # noqa: BLE001
            return Outcome(plan.title, [(f"ElectLeaders {topic}", error_name(exc))])
        return Outcome(plan.title, [(f"{tp.topic}-{tp.partition}", "NONE" if err is None else error_name(err))
                                    for tp, err in sorted(result.items(), key=lambda kv: kv[0].partition)],
                       fine=("NONE", "ELECTION_NOT_NEEDED"))

    # -- cancel a delayed message ----------------------------------------------------------

    def _plan_cancel_delayed(self, form: Mapping[str, str]) -> Plan:
        topic = _text(form, "topic")
        partition = _int(form, "partition", 0)
        offset = _int(form, "offset", 0)
        assert partition is not None and offset is not None
        t = self._topic(topic)
        info = t.partitions.get(partition)
        if info is None:
            raise ConsoleError("UNKNOWN_TOPIC_OR_PARTITION", f"partition {topic}-{partition}")
        plan = Plan("cancel-delayed", f"Cancel the delayed message at {topic}-{partition} offset {offset}",
                    params={"topic": topic, "partition": partition, "offset": offset})
        plan.lines.append(f"Cancel the delayed message whose producer was acknowledged with offset {offset} "
                          f"of {topic}-{partition}: it will never be delivered "
                          f"(MafkaEndHalf, commit=false, at the leader, broker {info.leader}).")
        plan.lines.append("A message already delivered cannot be cancelled (INVALID_TXN_STATE).")
        if info.leader < 0:
            plan.blocked = f"LEADER_NOT_AVAILABLE: {topic}-{partition} has no leader"
        return plan

    def _cancel_delayed(self, plan: Plan) -> Outcome:
        p = plan.params
        leader = self._topic(p["topic"]).partitions[p["partition"]].leader
        body = {"topic": p["topic"], "partition": p["partition"], "offset": p["offset"], "commit": False,
                "timeout_ms": int(self.timeout * 1000)}
        (answer,) = self.reader.wire.send_each(
            [Call(leader, MAFKA_END_HALF, body, version=0, channel=MAFKA_CHANNEL)], self.timeout)
        name = error_name(answer) if isinstance(answer, BaseException) else code_name(answer.error_code)
        return Outcome(plan.title, [(f"MafkaEndHalf {p['topic']}-{p['partition']} offset {p['offset']}", name)])

