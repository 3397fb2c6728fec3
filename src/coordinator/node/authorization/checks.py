"""The checks API rules are built from: one resource, each group or topic of a request, a group
and then its topics; a request naming several is split, the allowed part going to the handler and
the denied part answered with the error (after the allowed entries, or in the request's order for
the group lists), as Kafka's KafkaApis does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization.guard import Before, Narrowed
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.security.acls import CLUSTER_NAME, Operation, ResourceType

GROUP_DENIED = ErrorCode.group_authorization_failed
TOPIC_DENIED = ErrorCode.topic_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."
GROUP, TOPIC, CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER

#: A denied entry's answer, or None when the entry is allowed.
Denial = Callable[[Any, RequestContext, AccessControl], "dict[str, Any] | None"]


def may(
    access: AccessControl, ctx: RequestContext, op: Operation, kind: ResourceType, name: str
) -> bool:
    return access.allowed(ctx, op, kind, name)


def may_on_cluster(access: AccessControl, ctx: RequestContext, op: Operation) -> bool:
    return access.allowed(ctx, op, CLUSTER, CLUSTER_NAME)


# -- groups -------------------------------------------------------------------------------
def group_read(answer: Callable[[Any], dict[str, Any]], op: Operation = Operation.READ) -> Before:
    """`op` (READ) on the request's group, else `answer(request)`."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        if may(access, ctx, op, GROUP, request.group_id):
            return None
        return answer(request)

    return before


def split(
    request: Any,
    field: str,
    allowed: tuple[Any, ...],
    answer_field: str,
    key: str,
    order: list[str],
    denied: dict[str, dict[str, Any]],
    throttle_field: str = "throttle_time",
) -> ResponseValue | Narrowed:
    """Answer the denied entries, hand the allowed ones on, keep the request's order."""

    def merge(answer: dict[str, Any]) -> dict[str, Any]:
        answered = {entry[key]: entry for entry in answer.get(answer_field, [])}
        return {**answer, answer_field: [denied.get(k) or answered[k] for k in order]}

    if not allowed:
        return merge({throttle_field: 0, answer_field: []})
    return Narrowed(dataclasses.replace(request, **{field: allowed}), merge)


def per_group(
    field: str,
    answer_field: str,
    op: Operation,
    denied_entry: Callable[[str], dict[str, Any]],
    throttle_field: str = "throttle_time",
) -> Before:
    """`op` on each group the request's list `field` names; a denied one is `denied_entry`."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        names = list(getattr(request, field))
        denied = {n: denied_entry(n) for n in names if not may(access, ctx, op, GROUP, n)}
        if not denied:
            return None
        allowed = tuple(n for n in names if n not in denied)
        return split(
            request, field, allowed, answer_field, "group_id", names, denied, throttle_field
        )

    return before


def group_then_topics(
    group_op: Operation,
    group_denied: dict[str, Any],
    partition_denied: Callable[[Any], dict[str, Any]],
) -> Before:
    """`group_op` on the group (else `group_denied`), then READ on each topic: a denied topic's
    partitions are answered `partition_denied` (before any check that the topic exists, as
    Kafka does), and the handler is asked about the rest even when nothing is left, so that
    its group error (which replaces every partition's answer) still comes back."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        if not may(access, ctx, group_op, GROUP, request.group_id):
            return group_denied
        topics = request.topics
        denied = [t for t in topics if not may(access, ctx, Operation.READ, TOPIC, t.name)]
        if not denied:
            return None
        answers = [
            {"name": t.name, "partitions": [partition_denied(p) for p in t.partitions]}
            for t in denied
        ]

        def merge(answer: dict[str, Any]) -> dict[str, Any]:
            if answer.get("error_code", ErrorCode.none) != ErrorCode.none:
                return answer
            return {**answer, "topics": [*answer.get("topics", []), *answers]}

        allowed = tuple(t for t in topics if all(t is not d for d in denied))
        return Narrowed(dataclasses.replace(request, topics=allowed), merge)

    return before


# -- topics -------------------------------------------------------------------------------
def topic_name(topic: Any, ctx: RequestContext) -> str | None:
    """The name a Produce/Fetch/ListOffsets topic entry refers to (by name, or by topic id
    from v13 of Produce and Fetch); None for an id no topic has (the handler answers
    UNKNOWN_TOPIC_ID)."""
    name = getattr(topic, "name", None) or getattr(topic, "topic", None)
    if name:
        return str(name)
    topic_id = getattr(topic, "topic_id", None)
    if topic_id is None:
        return None
    found = ctx.broker.topics.by_id(topic_id) or ctx.broker.internal_topics.by_id(topic_id)
    return None if found is None else found.name


def per_entry(field: str | Callable[[int], str], answer_field: str, denial: Denial) -> Before:
    """Entries of a request's list `field` that `denial` answers are answered so; the others
    go to the handler, whose answer gets the denied entries appended."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        name = field(version) if callable(field) else field
        entries = list(getattr(request, name))
        verdicts = [denial(entry, ctx, access) for entry in entries]
        extra = [v for v in verdicts if v is not None]
        if not extra:
            return None
        allowed = tuple(e for e, v in zip(entries, verdicts, strict=True) if v is None)

        def merge(answer: dict[str, Any]) -> dict[str, Any]:
            return {**answer, answer_field: [*answer.get(answer_field, []), *extra]}

        if not allowed:
            return merge({"throttle_time": 0, "error_code": ErrorCode.none, answer_field: []})
        return Narrowed(dataclasses.replace(request, **{name: allowed}), merge)

    return before


def per_topic(
    op: Operation,
    topics_field: str,
    denied_topic: Callable[[Any], dict[str, Any]],
    answer_field: str,
) -> Before:
    """`op` on each topic of the request's list `topics_field` (named or by topic id)."""

    def denial(topic: Any, ctx: RequestContext, access: AccessControl) -> dict[str, Any] | None:
        name = topic_name(topic, ctx)
        if name is None or may(access, ctx, op, TOPIC, name):
            return None
        return denied_topic(topic)

    return per_entry(topics_field, answer_field, denial)


def topic_operation(op: Operation, answer: Callable[[Any], dict[str, Any]]) -> Denial:
    """`op` on an entry's topic `name`, else `answer(entry)`."""

    def denial(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
        return None if may(access, ctx, op, TOPIC, str(topic.name)) else answer(topic)

    return denial


# -- config resources ------------------------------------------------------------------------
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER = 2, 4, 8


def config_resource(op: Operation, with_configs: bool) -> Denial:
    """`op` on a config resource: the topic (TOPIC_AUTHORIZATION_FAILED) or, for the broker and
    its loggers, the cluster (CLUSTER_AUTHORIZATION_FAILED); other types are the handler's."""

    def denial(resource: Any, ctx: RequestContext, access: AccessControl) -> Any:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        if kind == _CONFIG_TOPIC:
            if may(access, ctx, op, TOPIC, name):
                return None
            code = TOPIC_DENIED
        elif kind in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
            if may_on_cluster(access, ctx, op):
                return None
            code = CLUSTER_DENIED
        else:
            return None
        answer = {
            "error_code": code,
            "error_message": None,
            "resource_type": kind,
            "resource_name": name,
        }
        return {**answer, "configs": []} if with_configs else answer

    return denial


def on_cluster(op: Operation, denied: Callable[[Any], dict[str, Any]]) -> Before:
    """`op` on the cluster, else `denied(request)` (the cluster admin APIs)."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        return None if may_on_cluster(access, ctx, op) else denied(request)

    return before
