"""``mafka acls``: Kafka 2.8's ``kafka-acls.sh`` (``kafka.admin.AclCommand``) for Mafka.

Exactly one of ``--add`` / ``--remove`` / ``--list``, against
``--bootstrap-server`` (CreateAcls, DeleteAcls and DescribeAcls through
:class:`mafka.client.admin.AdminClient`; ``--command-config`` names the admin
client's properties file, e.g. SASL credentials of a super user).  This module
owns the tool: its flags, Kafka's argument checks and messages, the ACLs the
flags stand for, and Kafka's output.

What the flags stand for, as in ``AclCommand``:

* resources: ``--topic T`` / ``--group G`` / ``--transactional-id X`` /
  ``--delegation-token D`` (each repeatable) and ``--cluster``, all with the
  ``--resource-pattern-type`` (``literal`` by default for every action, as in
  Kafka; ``prefixed``, and for ``--list``/``--remove`` the filters ``any`` and
  ``match``).  ``--cluster`` counts only with ``literal``, as in Kafka.
* entries: every ``--allow-principal`` × ``--operation`` (default ``All``) ×
  ``--allow-host`` (default ``*``) as ALLOW, and the same for ``--deny-*`` as DENY.
* ``--producer``: Write, Describe, Create on the topics; Write, Describe on the
  ``--transactional-id``\\ s; IdempotentWrite on the cluster with ``--idempotent``.
  ``--consumer``: Read, Describe on the topics, Read on the groups.
* Operations a resource type does not support are refused
  ("ResourceType GROUP only supports operations READ,DESCRIBE,DELETE,ALL").

Output is Kafka's::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

and after every action the ACLs now on the named resources (all of them when
none is named), ``Current ACLs for resource `…`:`` blocks.  ``--remove`` asks
"Are you sure you want to remove ACLs: … (y/n)" for each resource (answer
``y``) unless ``--force``; with no terminal to ask on it refuses instead.

Exit status 0, or 1 with Kafka's texts: argument errors on stderr followed by
the usage; a failure of the action (a broker error, a bad principal) on
stdout as ``Error while executing ACL command: <Java exception>`` followed by
the exception's first stack-trace line.  Where Kafka iterates a hash set
(entries, resources, supported operations) the order here is command-line
order, or the broker's for listings.

Not supported: the ``--authorizer`` / ``--authorizer-properties`` form, which
loads an authorizer into the tool and writes ZooKeeper directly; it is
refused with a message pointing to ``--bootstrap-server``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from mafka.cli.clients import admin_config, error_text
from mafka.cli.java_exceptions import java_class
from mafka.client.admin import AclBinding as ClientBinding
from mafka.client.admin import AclBindingFilter as ClientFilter
from mafka.client.admin import AdminClient
from mafka.client.admin_types import ResourceType as ClientResourceType
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.errors import ConfigError, ErrorCode
from mafka.security.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    parse_acl_principal,
)

__all__ = [
    "AclCommandError",
    "AclCommandFailure",
    "add_parser",
    "check_args",
    "filter_to_acls",
    "parse_operation",
    "parse_pattern_type",
    "resource_filters",
    "resource_to_acls",
    "run",
    "valid_operations",
]

USAGE_MESSAGE = "This tool helps to manage acls on kafka."

#: ``AclCommand.ClusterResourceFilter``: the cluster, the one name it can have.
CLUSTER_FILTER = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)

#: ``AclEntry.supportedOperations`` in Kafka's order of declaration (a Scala set: for the
#: types with at most four operations plus ALL, the order Kafka prints them in).
_SUPPORTED_ORDER: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
}

_PRODUCER_TOPIC_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
_PRODUCER_TXN_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE)
_CONSUMER_TOPIC_OPS = (AclOperation.READ, AclOperation.DESCRIBE)
_CONSUMER_GROUP_OPS = (AclOperation.READ,)

_ERRORS = "org.apache.kafka.common.errors"
_EXECUTION = "java.util.concurrent.ExecutionException"
_ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
_TIMEOUTS = frozenset({ClientError._TIMED_OUT, ClientError._TRANSPORT, ClientError._ALL_BROKERS_DOWN})
_NO_RESOURCE = ("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                "or --delegation-token <Delegation Token ID>")


class AclCommandError(Exception):
    """An argument error: the message on stderr, then the usage when ``usage``
    (Kafka's ``CommandLineUtils.printUsageAndDie``); exit status 1."""

    def __init__(self, message: str, usage: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class AclCommandFailure(Exception):
    """A failure of the action, printed on stdout as Kafka's ``AclCommand.main`` catches it:
    ``Error while executing ACL command: <message>`` and the exception's first stack-trace
    line (``trace``); exit status 1."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.message = message
        self.trace = trace


# ----------------------------------------------------------------------------- arguments


def add_parser(sub: Any) -> None:
    p = sub.add_parser("acls", help="add, remove and list ACLs (kafka-acls)", description=USAGE_MESSAGE)
    p.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="A list of host/port pairs to use for establishing the connection to the Kafka cluster.")
    p.add_argument("--command-config", metavar="FILE",
                   help="A property file containing configs to be passed to Admin Client.")
    p.add_argument("--authorizer", help="NOT SUPPORTED by Mafka (the authorizer form); use --bootstrap-server")
    p.add_argument("--authorizer-properties", action="append",
                   help="NOT SUPPORTED by Mafka (the authorizer form); use --bootstrap-server")
    p.add_argument("--zk-tls-config-file", help="NOT SUPPORTED by Mafka (the authorizer form)")
    p.add_argument("--topic", action="append",
                   help="topic to which ACLs should be added or removed. A value of * indicates ACL should "
                        "apply to all topics.")
    p.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    p.add_argument("--group", action="append",
                   help="Consumer Group to which the ACLs should be added or removed. A value of * indicates "
                        "the ACLs should apply to all groups.")
    p.add_argument("--transactional-id", action="append",
                   help="The transactionalId to which ACLs should be added or removed. A value of * indicates "
                        "the ACLs should apply to all transactionalIds.")
    p.add_argument("--idempotent", action="store_true",
                   help="Enable idempotence for the producer. This should be used in combination with the "
                        "--producer option.")
    p.add_argument("--delegation-token", action="append",
                   help="Delegation token to which ACLs should be added or removed. A value of * indicates ACL "
                        "should apply to all tokens.")
    p.add_argument("--resource-pattern-type", metavar="ANY|MATCH|LITERAL|PREFIXED",
                   help="The type of the resource pattern or pattern filter (default: LITERAL). When adding "
                        "acls, 'literal' or 'prefixed'; when listing or removing, also the filters 'any' "
                        "(any pattern type, the exact name) or 'match' (every pattern that affects the "
                        "resource). WARNING: 'match' with --remove should be used with care.")
    p.add_argument("--add", action="store_true", help="Indicates you are trying to add ACLs.")
    p.add_argument("--remove", action="store_true", help="Indicates you are trying to remove ACLs.")
    p.add_argument("--list", action="store_true",
                   help="List ACLs for the specified resource, use --topic <topic> or --group <group> or "
                        "--cluster to specify a resource.")
    p.add_argument("--operation", action="append",
                   help="Operation that is being allowed or denied (default: All). Valid operation names are: "
                        + ", ".join(op.kafka_name for op in AclOperation
                                    if op not in (AclOperation.UNKNOWN, AclOperation.ANY)))
    p.add_argument("--allow-principal", action="append",
                   help="principal is in principalType:name format. For example, User:* is the wild card "
                        "indicating all users.")
    p.add_argument("--deny-principal", action="append",
                   help="principal is in principalType:name format. DENY RULES TAKE PRECEDENCE OVER ALLOW RULES.")
    p.add_argument("--principal", action="append",
                   help="List ACLs for the specified principal (principalType:name). Multiple --principal "
                        "options can be passed.")
    p.add_argument("--allow-host", action="append",
                   help="Host from which principals listed in --allow-principal will have access (default: *).")
    p.add_argument("--deny-host", action="append",
                   help="Host from which principals listed in --deny-principal will be denied access "
                        "(default: *).")
    p.add_argument("--producer", action="store_true",
                   help="Convenience option to add/remove ACLs for producer role. This will generate ACLs "
                        "that allows WRITE,DESCRIBE and CREATE on topic.")
    p.add_argument("--consumer", action="store_true",
                   help="Convenience option to add/remove ACLs for consumer role. This will generate ACLs "
                        "that allows READ,DESCRIBE on topic and READ on group.")
    p.add_argument("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds to wait for the cluster (Mafka's; Kafka's tool waits 60)")
    p.set_defaults(func=run, acls_parser=p)


#: Every option's dest but --timeout (Mafka's own): none given means Kafka's "no arguments" usage.
_OPTION_DESTS = (
    "bootstrap_server", "command_config", "authorizer", "authorizer_properties", "zk_tls_config_file", "topic",
    "cluster", "group", "transactional_id", "idempotent", "delegation_token", "resource_pattern_type", "add",
    "remove", "list", "operation", "allow_principal", "deny_principal", "principal", "allow_host", "deny_host",
    "producer", "consumer", "force",
)


def _has(args: argparse.Namespace, dest: str) -> bool:
    """joptsimple's ``options.has``: the option was given (a default does not count)."""
    value = getattr(args, dest)
    return value is not None and value is not False


def parse_pattern_type(text: str | None) -> PatternType:
    """``--resource-pattern-type``: Kafka's ``PatternTypeConverter`` (any case; LITERAL when not given).

    Raises:
        AclCommandError: not a pattern type, or UNKNOWN (joptsimple's exception, no usage).
    """
    if text is None:
        return PatternType.LITERAL
    for member in PatternType:
        if member.name.lower() == text.lower() and member is not PatternType.UNKNOWN:
            return member
    raise AclCommandError(f"joptsimple.OptionArgumentConversionException: Cannot parse argument '{text}' "
                          "of option resource-pattern-type", usage=False)


def parse_operation(text: str) -> AclOperation:
    """``SecurityUtils.operation``: Kafka's Pascal-case name (``IdempotentWrite``) in any case,
    without separators; UNKNOWN for anything else (refused later, per resource type)."""
    key = text.upper()
    for member in AclOperation:
        if member.name.replace("_", "") == key:
            return member
    return AclOperation.UNKNOWN


def check_args(args: argparse.Namespace) -> None:
    """Kafka 2.8's ``AclCommandOptions.checkArgs``, in its order and with its messages.

    Raises:
        AclCommandError: the first rule broken.
    """
    bootstrap = _has(args, "bootstrap_server")
    if bootstrap and _has(args, "authorizer"):
        raise AclCommandError("Only one of --bootstrap-server or --authorizer must be specified")
    if not bootstrap and not _has(args, "authorizer_properties"):
        raise AclCommandError('Missing required argument "[authorizer-properties]"')
    if _has(args, "command_config") and not bootstrap:
        raise AclCommandError("The --command-config option can only be used with --bootstrap-server option")
    if _has(args, "authorizer_properties") and bootstrap:
        raise AclCommandError("The --authorizer-properties option can only be used with --authorizer option")
    if sum(1 for action in ("add", "remove", "list") if _has(args, action)) != 1:
        raise AclCommandError("Command must include exactly one action: --list, --add, --remove. ")
    _check_invalid(args, "list", ("producer", "consumer", "allow_host", "allow_principal", "deny_host",
                                  "deny_principal"))
    # --producer / --consumer infer the operations, and allow only
    _check_invalid(args, "producer", ("operation", "deny_principal", "deny_host"))
    _check_invalid(args, "consumer", ("operation", "deny_principal", "deny_host"))
    if _has(args, "principal") and not _has(args, "list"):
        raise AclCommandError("The --principal option is only available if --list is set")
    if _has(args, "producer") and not _has(args, "topic"):
        raise AclCommandError("With --producer you must specify a --topic")
    if _has(args, "idempotent") and not _has(args, "producer"):
        raise AclCommandError("The --idempotent option is only available if --producer is set")
    if _has(args, "consumer") and (
        not _has(args, "topic") or not _has(args, "group")
        or (not _has(args, "producer") and (_has(args, "cluster") or _has(args, "transactional_id")))
    ):
        raise AclCommandError("With --consumer you must specify a --topic and a --group and no --cluster or "
                              "--transactional-id option should be specified.")


def _check_invalid(args: argparse.Namespace, used: str, invalid: Iterable[str]) -> None:
    """``CommandLineUtils.checkInvalidArgs`` (joptsimple names an option ``[name]``)."""
    if not _has(args, used):
        return
    for dest in invalid:
        if _has(args, dest):
            raise AclCommandError(f'Option "[{used.replace("_", "-")}]" can\'t be used with option '
                                  f'"[{dest.replace("_", "-")}]"')


# ----------------------------------------------------------------------------- the ACLs the flags stand for


def _unique(items: Iterable[Any]) -> list[Any]:
    """Kafka's sets, in command-line order."""
    return list(dict.fromkeys(items))


def resource_filters(args: argparse.Namespace, pattern_type: PatternType,
                     die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """``AclCommand.getResourceFilter``: the resources named, in Kafka's order (topics, the cluster,
    groups, transactional ids, delegation tokens).

    The cluster counts only with a LITERAL pattern type, as in Kafka; transactional ids
    are not trimmed (Kafka trims every other name).

    Raises:
        AclCommandError: none named and ``die_if_none``.
    """
    filters = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in args.topic or []]
    if pattern_type is PatternType.LITERAL and (args.cluster or args.idempotent):
        filters.append(CLUSTER_FILTER)
    filters += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in args.group or []]
    filters += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, x, pattern_type)
                for x in args.transactional_id or []]
    filters += [ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, d.strip(), pattern_type)
                for d in args.delegation_token or []]
    if not filters and die_if_none:
        raise AclCommandError(_NO_RESOURCE)
    return _unique(filters)


def _principals(values: Sequence[str] | None) -> list[str]:
    """``getPrincipals``: each ``type:name`` checked and trimmed, as Kafka prints it.

    Raises:
        AclCommandFailure: not ``type:name`` (Kafka's IllegalArgumentException).
    """
    out = []
    for text in values or []:
        try:
            out.append(str(parse_acl_principal(text.strip())))
        except ValueError as exc:
            raise AclCommandFailure(str(exc), f"{_ILLEGAL_ARGUMENT}: {exc}") from None
    return _unique(out)


def _hosts(hosts: Sequence[str] | None, principals: Sequence[str] | None) -> list[str]:
    """``getHosts``: the hosts given, else ``*`` when principals are, else none."""
    if hosts:
        return _unique(h.strip() for h in hosts)
    return [WILDCARD_HOST] if principals else []


def entries(args: argparse.Namespace, operations: Sequence[AclOperation]) -> list[AccessControlEntry]:
    """``AclCommand.getAcl(opts, operations)``: ALLOW entries for every allowed principal ×
    operation × allowed host, then DENY entries likewise.

    Raises:
        AclCommandFailure: a malformed principal, or operation ``Any`` (Kafka's
            "operation must not be ANY").
    """
    out: list[AccessControlEntry] = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        names, where = _principals(principals), _hosts(hosts, principals)
        try:
            out += [AccessControlEntry(p, h, op, permission) for p in names for op in operations for h in where]
        except ValueError as exc:
            raise AclCommandFailure(str(exc), f"{_ILLEGAL_ARGUMENT}: {exc}") from None
    return _unique(out)


def _cli_operations(args: argparse.Namespace) -> list[AclOperation]:
    return _unique(parse_operation(op.strip()) for op in args.operation or [AclOperation.ALL.kafka_name])


def valid_operations(resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """The operations ``kafka-acls`` accepts on ``resource_type``: those it supports, and ALL."""
    return (*_SUPPORTED_ORDER[resource_type], AclOperation.ALL)


def filter_to_acls(args: argparse.Namespace,
                   pattern_type: PatternType) -> dict[ResourcePatternFilter, list[AccessControlEntry]]:
    """``AclCommand.getResourceFilterToAcls``: each resource named and the entries for it —
    from the flags, or the ``--producer`` / ``--consumer`` expansions (both may be given;
    a topic then gets the consumer's entries and the producer's).

    Raises:
        AclCommandError: no resource, or an operation the resource type does not
            support ("ResourceType TOPIC only supports operations …").
        AclCommandFailure: see :func:`entries`.
    """
    out: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        acls = entries(args, _cli_operations(args))
        out.update((f, acls) for f in resource_filters(args, pattern_type))
    if args.producer:
        filters = resource_filters(args, pattern_type)
        out.update((f, entries(args, _PRODUCER_TOPIC_OPS)) for f in filters if f.resource_type is ResourceType.TOPIC)
        out.update((f, entries(args, _PRODUCER_TXN_OPS)) for f in filters
                   if f.resource_type is ResourceType.TRANSACTIONAL_ID)
        if args.idempotent:
            out[CLUSTER_FILTER] = entries(args, (AclOperation.IDEMPOTENT_WRITE,))
    if args.consumer:
        for f in resource_filters(args, pattern_type):
            if f.resource_type is ResourceType.TOPIC:
                out[f] = _unique([*entries(args, _CONSUMER_TOPIC_OPS), *out.get(f, [])])
            elif f.resource_type is ResourceType.GROUP:
                out[f] = _unique([*entries(args, _CONSUMER_GROUP_OPS), *out.get(f, [])])
    for f, acls in out.items():
        valid = valid_operations(f.resource_type)
        if any(e.operation not in valid for e in acls):
            raise AclCommandError(f"ResourceType {f.resource_type.name} only supports operations "
                                  f"{','.join(op.name for op in valid)}")
    return out


def resource_to_acls(args: argparse.Namespace,
                     pattern_type: PatternType) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """``AclCommand.getResourceToAcls`` (for ``--add``): the patterns to bind the entries to.

    Raises:
        AclCommandError: a filter-only pattern type, no principal, or as :func:`filter_to_acls`.
    """
    if not pattern_type.is_specific:
        raise AclCommandError(f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid "
                              "when adding acls.")
    out = {ResourcePattern(f.resource_type, f.name or "", pattern_type): acls
           for f, acls in filter_to_acls(args, pattern_type).items()}
    if any(not acls for acls in out.values()):
        raise AclCommandError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return out


# ----------------------------------------------------------------------------- output


def _block(head: str, acls: Iterable[object]) -> str:
    """Kafka's ``s"$head: $Newline ${acls.map("\\t" + _).mkString(Newline)} $Newline"``."""
    return f"{head}: \n " + "\n".join(f"\t{a}" for a in acls) + " \n"


def _print_resource_acls(resource_acls: dict[ResourcePattern, list[AccessControlEntry]]) -> None:
    for pattern, acls in resource_acls.items():
        print(_block(f"Current ACLs for resource `{pattern}`", acls))


# ----------------------------------------------------------------------------- the admin client


def _client_resource_type(resource_type: ResourceType) -> ClientResourceType:
    """The admin client's resource type of the same code (CLUSTER is its BROKER, as librdkafka's).

    Raises:
        AclCommandError: a type the admin client has no member for.
    """
    try:
        return ClientResourceType(int(resource_type))
    except ValueError:
        raise AclCommandError(f"Mafka's admin client cannot manage ACLs of resource type {resource_type.name}",
                              usage=False) from None


def _client_binding(pattern: ResourcePattern, entry: AccessControlEntry) -> ClientBinding:
    return ClientBinding(_client_resource_type(pattern.resource_type), pattern.name, int(pattern.pattern_type),
                         entry.principal, entry.host, int(entry.operation), int(entry.permission_type))


def _client_filter(pattern: ResourcePatternFilter, entry: AccessControlEntry | None) -> ClientFilter:
    """The admin client's filter for ``pattern`` and exactly ``entry`` (None: any entry)."""
    if entry is None:
        return ClientFilter(_client_resource_type(pattern.resource_type), pattern.name, int(pattern.pattern_type),
                            None, None, int(AclOperation.ANY), int(AclPermissionType.ANY))
    return ClientFilter(_client_resource_type(pattern.resource_type), pattern.name, int(pattern.pattern_type),
                        entry.principal, entry.host, int(entry.operation), int(entry.permission_type))


def _from_client(binding: ClientBinding) -> tuple[ResourcePattern, AccessControlEntry]:
    """A described binding in Kafka's model (so that it prints as Kafka's: CLUSTER, not BROKER)."""
    pattern = ResourcePattern(ResourceType.from_code(binding.restype_int), binding.name or "",
                              PatternType.from_code(binding.resource_pattern_type_int))
    entry = AccessControlEntry(binding.principal or "", binding.host or "",
                               AclOperation.from_code(binding.operation_int),
                               AclPermissionType.from_code(binding.permission_type_int))
    return pattern, entry


def _java_exception(code: int, message: str | None) -> str:
    """The Java exception Kafka's admin client raises for a broker code, with its text."""
    return f"{java_class(code)}: {message if message is not None else ErrorCode(code).description}"


def _wait(future: Any, timeout: float, call: str) -> Any:
    """``future.get()`` as Kafka's tool meets it.

    Raises:
        AclCommandFailure: the ExecutionException Kafka's ``…all().get()`` throws.
    """
    try:
        return future.result(timeout + 5.0)
    except KafkaException as exc:
        err = exc.error
        if err.code() in _TIMEOUTS:
            cause = f"{_ERRORS}.TimeoutException: Timed out waiting for a node assignment. Call: {call}"
        else:
            try:
                ErrorCode(err.code())
            except ValueError:
                cause = f"org.apache.kafka.common.KafkaException: {err.str()}"
            else:
                cause = _java_exception(err.code(), error_text(err))
        raise AclCommandFailure(cause, f"{_EXECUTION}: {cause}") from None
    except TimeoutError:
        cause = f"{_ERRORS}.TimeoutException: Timed out waiting for a node assignment. Call: {call}"
        raise AclCommandFailure(cause, f"{_EXECUTION}: {cause}") from None


def _describe(admin: AdminClient, filters: list[ResourcePatternFilter],
              timeout: float) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """``AdminClientService.getAcls``: the ACLs on the resources ``filters`` select (all ACLs
    when none), by pattern, each entry once, in the broker's order."""
    client_filters = [_client_filter(f, None) for f in filters] or [
        ClientFilter(ClientResourceType.ANY, None, int(PatternType.ANY), None, None,
                     int(AclOperation.ANY), int(AclPermissionType.ANY))]
    futures = [admin.describe_acls(f, request_timeout=timeout) for f in client_filters]
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for fut in futures:
        for binding in _wait(fut, timeout, "describeAcls"):
            pattern, entry = _from_client(binding)
            acls = out.setdefault(pattern, [])
            if entry not in acls:
                acls.append(entry)
    return out


def _list(admin: AdminClient, args: argparse.Namespace, pattern_type: PatternType) -> None:
    """``AdminClientService.listAcls``: the ACLs on the resources named, for each ``--principal`` given."""
    filters = resource_filters(args, pattern_type, die_if_none=False)
    principals = _principals(args.principal)
    resource_acls = _describe(admin, filters, args.timeout)
    if not principals:
        _print_resource_acls(resource_acls)
        return
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        _print_resource_acls({pattern: mine for pattern, acls in resource_acls.items()
                              if (mine := [e for e in acls if e.principal == principal])})


def _add(admin: AdminClient, args: argparse.Namespace, pattern_type: PatternType,
         to_add: dict[ResourcePattern, list[AccessControlEntry]]) -> None:
    for pattern, acls in to_add.items():
        print(_block(f"Adding ACLs for resource `{pattern}`", acls), flush=True)
        futures = admin.create_acls([_client_binding(pattern, e) for e in acls], request_timeout=args.timeout)
        for fut in futures.values():
            _wait(fut, args.timeout, "createAcls")
    _list(admin, args, pattern_type)


def _confirm(question: str) -> bool:
    """Kafka's ``confirmAction``: the question, then a line of standard input equal to ``y`` (any case)."""
    print(question, flush=True)
    return sys.stdin.readline().rstrip("\r\n").lower() == "y"


def _remove(admin: AdminClient, args: argparse.Namespace, pattern_type: PatternType,
            to_remove: dict[ResourcePatternFilter, list[AccessControlEntry]]) -> None:
    for pattern_filter, acls in to_remove.items():
        if not acls:
            question = f"Are you sure you want to delete all ACLs for resource filter `{pattern_filter}`? (y/n)"
        else:
            question = _block("Are you sure you want to remove ACLs", acls) + \
                f" from resource filter `{pattern_filter}`? (y/n)"
        if not args.force and not _confirm(question):
            continue
        filters = [_client_filter(pattern_filter, e) for e in acls] or [_client_filter(pattern_filter, None)]
        for fut in admin.delete_acls(_unique(filters), request_timeout=args.timeout).values():
            _wait(fut, args.timeout, "deleteAcls")
    _list(admin, args, pattern_type)


# ----------------------------------------------------------------------------- the command


def _execute(args: argparse.Namespace) -> None:
    if not any(_has(args, dest) for dest in _OPTION_DESTS):
        raise AclCommandError(USAGE_MESSAGE)
    pattern_type = parse_pattern_type(args.resource_pattern_type)
    check_args(args)
    if not _has(args, "bootstrap_server"):
        raise AclCommandError("The --authorizer-properties form (an authorizer loaded into the tool, writing "
                              "ZooKeeper directly) is not supported by Mafka: use --bootstrap-server, with "
                              "--command-config for the admin client's security settings", usage=False)
    # As Kafka, the ACLs are worked out before the cluster is contacted: argument errors come first.
    to_add = resource_to_acls(args, pattern_type) if args.add else None
    to_remove = filter_to_acls(args, pattern_type) if args.remove else None
    for named in resource_filters(args, pattern_type, die_if_none=False):
        _client_resource_type(named.resource_type)  # a type the client cannot send fails before any change
    if to_remove is not None and not args.force and not sys.stdin.isatty():
        # Kafka would block on (or die reading) a standard input nobody answers.
        raise AclCommandError("Refusing to remove ACLs without confirmation: standard input is not a terminal. "
                              "Use --force to remove them without a prompt.", usage=False)
    try:
        config = admin_config(args.bootstrap_server, "mafka-acls", args.timeout, args.command_config)
        admin = AdminClient(config)
    except (ConfigError, ValueError) as exc:
        cause = f"org.apache.kafka.common.config.ConfigException: {exc}"
        raise AclCommandFailure(cause, cause) from None
    with admin:
        if to_add is not None:
            _add(admin, args, pattern_type, to_add)
        elif to_remove is not None:
            _remove(admin, args, pattern_type, to_remove)
        else:
            _list(admin, args, pattern_type)


def run(args: argparse.Namespace) -> int:
    """``mafka acls …``: 0, or 1 after printing Kafka's error (see the module docstring)."""
    try:
        _execute(args)
    except AclCommandError as exc:
        print(exc.message, file=sys.stderr)
        if exc.usage:
            print(args.acls_parser.format_help(), file=sys.stderr, end="")
        return 1
    except AclCommandFailure as exc:
        print(f"Error while executing ACL command: {exc.message}")
        print(exc.trace)
        return 1
    return 0
