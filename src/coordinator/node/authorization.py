"""What each API asks the authorizer before it answers, and Kafka's answer when it is denied.

When the node has an authorizer (`coordinator.node.access_control`), `guard(registry, access)`
wraps the handlers of the APIs below; without one nothing is checked, as on Kafka. The checks
and error codes follow Kafka's KafkaApis:

- JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat: READ on the group, else
  GROUP_AUTHORIZATION_FAILED; OffsetCommit likewise on every partition, and then READ on each
  topic (TOPIC_AUTHORIZATION_FAILED on its partitions);
- OffsetFetch, FindCoordinator (group keys), DescribeGroups, ConsumerGroupDescribe: DESCRIBE on
  each group, else GROUP_AUTHORIZATION_FAILED for that group; OffsetFetch also DESCRIBE on each
  topic (TOPIC_AUTHORIZATION_FAILED for a named topic, left out of "all topics");
  DeleteGroups: DELETE on the group; OffsetDelete: DELETE on the group, then READ on each topic
  (TOPIC_AUTHORIZATION_FAILED on its partitions);
- ListGroups: every group with DESCRIBE on the cluster, else only those it may DESCRIBE;
- Metadata, DescribeTopicPartitions: DESCRIBE on each topic: TOPIC_AUTHORIZATION_FAILED for a
  topic asked for by name, left out of "all topics";
- Produce: WRITE, Fetch: READ, ListOffsets: DESCRIBE on each topic, else
  TOPIC_AUTHORIZATION_FAILED on its partitions;
- CreateTopics: CREATE on the cluster or the topic; DeleteTopics and DeleteRecords: DELETE,
  CreatePartitions: ALTER on the topic; else TOPIC_AUTHORIZATION_FAILED for it;
- DescribeConfigs: DESCRIBE_CONFIGS, AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS on
  the topic (TOPIC_AUTHORIZATION_FAILED) or, for the broker, the cluster
  (CLUSTER_AUTHORIZATION_FAILED);
- CreateAcls, DeleteAcls / DescribeAcls: ALTER / DESCRIBE on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED (checked in their own modules);
- AlterUserScramCredentials / DescribeUserScramCredentials: ALTER / DESCRIBE on the cluster,
  else CLUSTER_AUTHORIZATION_FAILED;
- DescribeLogDirs, ListPartitionReassignments: DESCRIBE, ListConfigResources: DESCRIBE_CONFIGS,
  AlterReplicaLogDirs, ElectLeaders, AlterPartitionReassignments: ALTER on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED (for every partition named, where the answer has partitions).

A request naming several groups or topics is split: the allowed part goes to the handler, the
denied part is answered with the error (after the allowed entries, or in the request's order for
the group lists). InitProducerId (idempotent producers) needs IDEMPOTENT_WRITE on the cluster or
WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED. The authorized-operations fields
(KIP-430) of Metadata, DescribeGroups, ConsumerGroupDescribe and DescribeCluster list what the
client may do. The client-balance extension APIs (ours) follow the Kafka APIs they stand beside:
ClientBalanceHeartbeat and PartitionRelease need READ on the group, PartitionRegister READ on the
group and on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions), ClientBalanceDescribe
DESCRIBE on each group.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.access_control import AccessControl
from coordinator.node.apis import (
    alter_partition_reassignments,
    alter_replica_log_dirs,
    describe_log_dirs,
    elect_leaders,
    find_coordinator,
    list_config_resources,
    list_partition_reassignments,
)
from coordinator.node.apis.operations import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    NOT_REQUESTED,
    TOPIC_OPERATIONS,
)
from coordinator.node.contract import ApiRegistry, ApiSpec, RequestContext, ResponseValue
from coordinator.wire import client_balance_schema as client_balance
from coordinator.wire.security.acls import CLUSTER_NAME, Operation, ResourceType

GROUP_DENIED = ErrorCode.group_authorization_failed
TOPIC_DENIED = ErrorCode.topic_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
_CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."
_GROUP, _TOPIC, _CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER


@dataclass(frozen=True)
class Narrowed:
    """Only part of the request is allowed: hand `request` to the handler, then `merge` the
    denied part into its answer (a version-agnostic dict)."""

    request: Any
    merge: Callable[[dict[str, Any]], dict[str, Any]]


Before = Callable[[Any, int, RequestContext, AccessControl], "ResponseValue | Narrowed"]
After = Callable[[Any, int, RequestContext, AccessControl, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Rule:
    before: Before | None = None
    after: After | None = None


def guard(registry: ApiRegistry, access: AccessControl) -> None:
    """Wrap every registered API that has a rule."""
    for spec in list(registry):
        rule = RULES.get(spec.api_key)
        if rule is not None:
            registry.register(_guarded(spec, rule, access), replace=True)


def _guarded(spec: ApiSpec, rule: Rule, access: AccessControl) -> ApiSpec:
    def check(request: Any, version: int, ctx: RequestContext) -> ResponseValue | Narrowed:
        return None if rule.before is None else rule.before(request, version, ctx, access)

    def finish(
        request: Any, version: int, ctx: RequestContext, value: ResponseValue, narrowed: Any
    ) -> ResponseValue:
        if isinstance(narrowed, Narrowed) and isinstance(value, dict):
            value = narrowed.merge(value)
        if rule.after is not None and isinstance(value, dict):
            value = rule.after(request, version, ctx, access, value)
        return value

    async def handle(request: Any, version: int, ctx: RequestContext) -> ResponseValue:
        verdict = check(request, version, ctx)
        if verdict is not None and not isinstance(verdict, Narrowed):
            return verdict
        asked = verdict.request if isinstance(verdict, Narrowed) else request
        value = await spec.handle(asked, version, ctx)
        return finish(request, version, ctx, value, verdict)

    answer_now = None
    if spec.answer_now is not None:
        immediate = spec.answer_now

        def answer_now(request: Any, version: int, ctx: RequestContext) -> ResponseValue:
            verdict = check(request, version, ctx)
            if verdict is not None and not isinstance(verdict, Narrowed):
                return verdict
            asked = verdict.request if isinstance(verdict, Narrowed) else request
            value = immediate(asked, version, ctx)
            return None if value is None else finish(request, version, ctx, value, verdict)

    answer_parked = None
    if spec.answer_parked is not None:
        park = spec.answer_parked

        def answer_parked(
            request: Any, version: int, ctx: RequestContext, answer: Callable[[ResponseValue], None]
        ) -> None:
            verdict = check(request, version, ctx)
            if verdict is not None and not isinstance(verdict, Narrowed):
                answer(verdict)
                return
            asked = verdict.request if isinstance(verdict, Narrowed) else request

            def answered(value: ResponseValue) -> None:
                answer(finish(request, version, ctx, value, verdict))

            park(asked, version, ctx, answered)

    return dataclasses.replace(
        spec, handle=handle, answer_now=answer_now, answer_parked=answer_parked
    )


def _may(
    access: AccessControl, ctx: RequestContext, op: Operation, kind: ResourceType, name: str
) -> bool:
    return access.allowed(ctx, op, kind, name)


# -- groups -------------------------------------------------------------------------------
def _group_read(answer: Callable[[Any], dict[str, Any]], op: Operation = Operation.READ) -> Before:
    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        if _may(access, ctx, op, _GROUP, request.group_id):
            return None
        return answer(request)

    return before


def _offset_commit_denied(request: Any) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "topic_id": getattr(t, "topic_id", None),
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": GROUP_DENIED}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ],
    }


def _offset_fetch(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    if version < 8:
        if _may(access, ctx, Operation.DESCRIBE, _GROUP, request.group_id):
            return None
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": -1,
                        "metadata": "",
                        "error_code": GROUP_DENIED,
                    }
                    for p in t.partition_indexes
                ],
            }
            for t in (request.topics or ())
        ]
        return {"throttle_time": 0, "error_code": GROUP_DENIED, "topics": topics}
    denied = [
        g.group_id
        for g in request.groups
        if not _may(access, ctx, Operation.DESCRIBE, _GROUP, g.group_id)
    ]
    if not denied:
        return None
    entries = {g: {"group_id": g, "topics": [], "error_code": GROUP_DENIED} for g in denied}
    allowed = tuple(g for g in request.groups if g.group_id not in entries)
    return _split(
        request,
        "groups",
        allowed,
        "groups",
        "group_id",
        [g.group_id for g in request.groups],
        entries,
    )


def _split(
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


def _per_group(
    field: str,
    answer_field: str,
    op: Operation,
    denied_entry: Callable[[str], dict[str, Any]],
    throttle_field: str = "throttle_time",
) -> Before:
    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        names = list(getattr(request, field))
        denied = {n: denied_entry(n) for n in names if not _may(access, ctx, op, _GROUP, n)}
        if not denied:
            return None
        allowed = tuple(n for n in names if n not in denied)
        return _split(
            request, field, allowed, answer_field, "group_id", names, denied, throttle_field
        )

    return before


def _described_denied(group: str) -> dict[str, Any]:
    return {
        "error_code": GROUP_DENIED,
        "group_id": group,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "error_message": None,
    }


def _find_coordinator(
    request: Any, version: int, ctx: RequestContext, access: AccessControl
) -> Any:
    key_type = getattr(request, "key_type", find_coordinator.GROUP_KEY_TYPE)
    if key_type != find_coordinator.GROUP_KEY_TYPE:
        return None
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]
    if all(_may(access, ctx, Operation.DESCRIBE, _GROUP, k) for k in keys):
        return None

    def entry(key: str) -> dict[str, Any]:
        if _may(access, ctx, Operation.DESCRIBE, _GROUP, key):
            return find_coordinator.locate(key_type, version, ctx)
        return {
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": GROUP_DENIED,
            "error_message": None,
        }

    if version >= 4:
        return {"throttle_time": 0, "coordinators": [{"key": k, **entry(k)} for k in keys]}
    return {"throttle_time": 0, **entry(keys[0])}


def _list_groups(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    if _may(access, ctx, Operation.DESCRIBE, _CLUSTER, CLUSTER_NAME):
        return answer
    groups = [
        g
        for g in answer.get("groups", [])
        if _may(access, ctx, Operation.DESCRIBE, _GROUP, g["group_id"])
    ]
    return {**answer, "groups": groups}


# -- topics -------------------------------------------------------------------------------
def _metadata(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    named = request.topics is not None and not (version == 0 and not request.topics)
    topics = []
    for topic in answer.get("topics", []):
        name = topic.get("name")
        if name is None or _may(access, ctx, Operation.DESCRIBE, _TOPIC, name):
            topics.append(topic)
        elif named:
            topics.append(
                {**topic, "error_code": TOPIC_DENIED, "partitions": [], "is_internal": False}
            )
    return {**answer, "topics": topics}


def _describe_topic_partitions(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """DESCRIBE on each topic, as Metadata; an allowed one lists what the client may do.

    DIFFERS: the page is cut before topics are left out, so a page of "all topics" may hold
    fewer partitions than the limit (the cursor still goes on from where it ended)."""
    named = bool(request.topics)
    topics = []
    for topic in answer.get("topics", []):
        name = str(topic["name"])
        if _may(access, ctx, Operation.DESCRIBE, _TOPIC, name):
            operations = topic.get("topic_authorized_operations", NOT_REQUESTED)
            if operations != NOT_REQUESTED:
                operations = _operations(access, ctx, _TOPIC, name, TOPIC_OPERATIONS)
            topics.append({**topic, "topic_authorized_operations": operations})
        elif named:
            topics.append(
                {
                    **topic,
                    "error_code": TOPIC_DENIED,
                    "topic_id": uuid.UUID(int=0),
                    "is_internal": False,
                    "partitions": [],
                    "topic_authorized_operations": NOT_REQUESTED,
                }
            )
    return {**answer, "topics": topics}


def _topic_name(topic: Any, ctx: RequestContext) -> str | None:
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


Denial = Callable[[Any, RequestContext, AccessControl], "dict[str, Any] | None"]


def _per_entry(field: str | Callable[[int], str], answer_field: str, denial: Denial) -> Before:
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
            return merge(_empty_answer(request, version, answer_field))
        return Narrowed(dataclasses.replace(request, **{name: allowed}), merge)

    return before


def _per_topic(
    op: Operation,
    topics_field: str,
    denied_topic: Callable[[Any], dict[str, Any]],
    answer_field: str,
) -> Before:
    def denial(topic: Any, ctx: RequestContext, access: AccessControl) -> dict[str, Any] | None:
        name = _topic_name(topic, ctx)
        if name is None or _may(access, ctx, op, _TOPIC, name):
            return None
        return denied_topic(topic)

    return _per_entry(topics_field, answer_field, denial)


def _empty_answer(request: Any, version: int, answer_field: str) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": ErrorCode.none, answer_field: []}


def _produce_denied(topic: Any) -> dict[str, Any]:
    return {
        "name": getattr(topic, "name", None),
        "topic_id": getattr(topic, "topic_id", None),
        "partition_responses": [
            {
                "index": p.index,
                "error_code": TOPIC_DENIED,
                "base_offset": -1,
                "log_append_time": None,
                "log_start_offset": -1,
            }
            for p in topic.partition_data
        ],
    }


def _fetch_denied(topic: Any) -> dict[str, Any]:
    return {
        "topic": getattr(topic, "topic", None),
        "topic_id": getattr(topic, "topic_id", None),
        "partitions": [
            {
                "partition_index": p.partition,
                "error_code": TOPIC_DENIED,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "records": None,
            }
            for p in topic.partitions
        ],
    }


def _list_offsets_denied(topic: Any) -> dict[str, Any]:
    return {
        "name": topic.name,
        "partitions": [
            {
                "partition_index": p.partition_index,
                "error_code": TOPIC_DENIED,
                "timestamp": -1,
                "offset": -1,
                "old_style_offsets": [],
            }
            for p in topic.partitions
        ],
    }


# -- topic admin APIs --------------------------------------------------------------------------
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER = 2, 4, 8


def _create_topic(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
    name = str(topic.name)
    if _may(access, ctx, Operation.CREATE, _CLUSTER, CLUSTER_NAME) or _may(
        access, ctx, Operation.CREATE, _TOPIC, name
    ):
        return None
    return {
        "name": name,
        "error_code": TOPIC_DENIED,
        "error_message": "Authorization failed.",
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


def _delete_topic(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
    name = topic if isinstance(topic, str) else _topic_name(topic, ctx)
    if name is None or _may(access, ctx, Operation.DELETE, _TOPIC, name):
        return None
    topic_id = getattr(topic, "topic_id", None)
    return {
        "name": name,
        "topic_id": topic_id or uuid.UUID(int=0),
        "error_code": TOPIC_DENIED,
        "error_message": None,
    }


def _topic_operation(op: Operation, answer: Callable[[Any], dict[str, Any]]) -> Denial:
    def denial(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
        return None if _may(access, ctx, op, _TOPIC, str(topic.name)) else answer(topic)

    return denial


def _config_resource(op: Operation, with_configs: bool) -> Denial:
    def denial(resource: Any, ctx: RequestContext, access: AccessControl) -> Any:
        kind, name = int(resource.resource_type), str(resource.resource_name)
        if kind == _CONFIG_TOPIC:
            if _may(access, ctx, op, _TOPIC, name):
                return None
            code = TOPIC_DENIED
        elif kind in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
            if _may(access, ctx, op, _CLUSTER, CLUSTER_NAME):
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


# -- topics of the offset APIs -----------------------------------------------------------------
def _offset_commit(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    """READ on the group, then READ on each topic committed to."""
    if not _may(access, ctx, Operation.READ, _GROUP, request.group_id):
        return _offset_commit_denied(request)
    return _commit_topics(request, version, ctx, access)


_commit_topics = _per_topic(
    Operation.READ,
    "topics",
    lambda t: {
        "name": t.name,
        "topic_id": getattr(t, "topic_id", None),
        "partitions": [
            {"partition_index": p.partition_index, "error_code": TOPIC_DENIED} for p in t.partitions
        ],
    },
    "topics",
)


def _offset_fetch_topics(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    """Offsets of topics the client may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED when it
    named them, left out when it asked for all (reading offsets changes nothing, so the
    handler answers first and the answer is filtered)."""

    def filtered(topics: list[dict[str, Any]], named: bool) -> list[dict[str, Any]]:
        kept = []
        for topic in topics:
            if _may(access, ctx, Operation.DESCRIBE, _TOPIC, str(topic["name"])):
                kept.append(topic)
            elif named:
                kept.append(
                    {
                        **topic,
                        "partitions": [
                            {
                                **p,
                                "committed_offset": -1,
                                "metadata": "",
                                "error_code": TOPIC_DENIED,
                            }
                            for p in topic["partitions"]
                        ],
                    }
                )
        return kept

    if version < 8:
        return {**answer, "topics": filtered(answer.get("topics", []), request.topics is not None)}
    named = {g.group_id: g.topics is not None for g in request.groups}
    groups = [
        {**g, "topics": filtered(g.get("topics", []), named.get(g["group_id"], True))}
        for g in answer.get("groups", [])
    ]
    return {**answer, "groups": groups}


def _group_then_topics(
    group_op: Operation,
    group_denied: dict[str, Any],
    partition_denied: Callable[[Any], dict[str, Any]],
) -> Before:
    """`group_op` on the group (else `group_denied`), then READ on each topic: a denied topic's
    partitions are answered `partition_denied` (before any check that the topic exists, as
    Kafka does), and the handler is asked about the rest even when nothing is left, so that
    its group error (which replaces every partition's answer) still comes back."""

    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        if not _may(access, ctx, group_op, _GROUP, request.group_id):
            return group_denied
        topics = request.topics
        denied = [t for t in topics if not _may(access, ctx, Operation.READ, _TOPIC, t.name)]
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


_offset_delete = _group_then_topics(
    Operation.DELETE,
    {"throttle_time": 0, "error_code": GROUP_DENIED, "topics": []},
    lambda p: {"partition_index": p.partition_index, "error_code": TOPIC_DENIED},
)


# -- SCRAM credentials ---------------------------------------------------------------------------
def _scram_describe(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    """DESCRIBE on the cluster; Kafka's refusal repeats the error once per user named."""
    if _may(access, ctx, Operation.DESCRIBE, _CLUSTER, CLUSTER_NAME):
        return None
    denied = {"error_code": CLUSTER_DENIED, "error_message": _CLUSTER_DENIED_MESSAGE}
    results = [{"user": "", **denied, "credential_infos": []} for _ in request.users or ()]
    return {"throttle_time": 0, **denied, "results": results}


def _scram_alter(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
    """ALTER on the cluster, else every user named is refused (in name order, as Kafka)."""
    if _may(access, ctx, Operation.ALTER, _CLUSTER, CLUSTER_NAME):
        return None
    users = sorted({c.name for c in (*request.deletions, *request.upsertions)})
    results = [
        {"user": u, "error_code": CLUSTER_DENIED, "error_message": _CLUSTER_DENIED_MESSAGE}
        for u in users
    ]
    return {"throttle_time": 0, "results": results}


# -- cluster admin APIs -----------------------------------------------------------------------
def _on_cluster(op: Operation, denied: Callable[[Any], dict[str, Any]]) -> Before:
    def before(request: Any, version: int, ctx: RequestContext, access: AccessControl) -> Any:
        return None if _may(access, ctx, op, _CLUSTER, CLUSTER_NAME) else denied(request)

    return before


def _reassignments_denied(request: Any) -> dict[str, Any]:
    responses = [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": CLUSTER_DENIED,
                    "error_message": _CLUSTER_DENIED_MESSAGE,
                }
                for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    answer = alter_partition_reassignments.answer(request, responses, CLUSTER_DENIED)
    return {**answer, "error_message": _CLUSTER_DENIED_MESSAGE}


_CLUSTER_ADMIN_RULES: dict[int, Rule] = {
    describe_log_dirs.API_KEY: Rule(
        _on_cluster(
            Operation.DESCRIBE,
            lambda r: {"throttle_time": 0, "error_code": CLUSTER_DENIED, "results": []},
        )
    ),
    list_partition_reassignments.API_KEY: Rule(
        _on_cluster(
            Operation.DESCRIBE,
            lambda r: {
                "throttle_time": 0,
                "error_code": CLUSTER_DENIED,
                "error_message": _CLUSTER_DENIED_MESSAGE,
                "topics": [],
            },
        )
    ),
    list_config_resources.API_KEY: Rule(
        _on_cluster(
            Operation.DESCRIBE_CONFIGS,
            lambda r: {"throttle_time": 0, "error_code": CLUSTER_DENIED, "config_resources": []},
        )
    ),
    alter_replica_log_dirs.API_KEY: Rule(
        _on_cluster(
            Operation.ALTER,
            lambda r: alter_replica_log_dirs.results(r, lambda *_: CLUSTER_DENIED),
        )
    ),
    elect_leaders.API_KEY: Rule(
        _on_cluster(Operation.ALTER, lambda r: elect_leaders.refused(r, CLUSTER_DENIED, None))
    ),
    alter_partition_reassignments.API_KEY: Rule(
        _on_cluster(Operation.ALTER, _reassignments_denied)
    ),
}


# -- the client-balance extension APIs (ours, not Kafka's) --------------------------------------
# They follow the Kafka APIs they stand beside: a node's heartbeat and its partition releases
# are ConsumerGroupHeartbeat's READ on the group; registering partitions is consuming them,
# OffsetCommit's READ on the group and on each topic; describing is DESCRIBE on each group.
_client_balance_group_read = _group_read(
    lambda r: {
        "throttle_time_ms": 0,
        "error_code": GROUP_DENIED,
        "error_message": "Not authorized to access group",
        "member_epoch": -1,
        "heartbeat_interval_ms": 0,
        "source_count": -1,
        "held": [],
    }
)
_partition_register = _group_then_topics(
    Operation.READ,
    {
        "throttle_time_ms": 0,
        "error_code": GROUP_DENIED,
        "error_message": "Not authorized to access group",
        "topics": [],
    },
    lambda p: {
        "partition_index": p.partition_index,
        "error_code": TOPIC_DENIED,
        "offset": -1,
        "holder": None,
    },
)
_partition_release = _group_read(
    lambda r: {"throttle_time_ms": 0, "error_code": GROUP_DENIED, "topics": []}
)
_client_balance_describe = _per_group(
    "group_ids",
    "groups",
    Operation.DESCRIBE,
    lambda g: {
        "group_id": g,
        "error_code": GROUP_DENIED,
        "state": "",
        "group_epoch": -1,
        "source_count": -1,
        "topics": [],
        "nodes": [],
    },
    throttle_field="throttle_time_ms",
)


# -- producers, authorized operations ----------------------------------------------------------
def _init_producer_id(
    request: Any, version: int, ctx: RequestContext, access: AccessControl
) -> Any:
    """An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    if request.transactional_id is not None:
        return None  # answered COORDINATOR_NOT_AVAILABLE: no transactions here
    if _may(access, ctx, Operation.IDEMPOTENT_WRITE, _CLUSTER, CLUSTER_NAME) or (
        access.allowed_somewhere(ctx, Operation.WRITE, _TOPIC)
    ):
        return None
    return {
        "throttle_time": 0,
        "error_code": CLUSTER_DENIED,
        "producer_id": -1,
        "producer_epoch": -1,
    }


def _operations(
    access: AccessControl, ctx: RequestContext, kind: ResourceType, name: str, supported: int
) -> int:
    """The KIP-430 bitfield: the supported operations the client may do on the resource."""
    allowed = 0
    for operation in Operation:
        if supported & (1 << operation) and _may(access, ctx, operation, kind, name):
            allowed |= 1 << operation
    return allowed


def _with_operations(field: str, kind: ResourceType, supported: int, key: str) -> After:
    """Compute `field` of each entry of the answer's list (when it was asked for)."""
    entries_field = "topics" if kind is _TOPIC else "groups"

    def after(
        request: Any,
        version: int,
        ctx: RequestContext,
        access: AccessControl,
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        entries = []
        for entry in answer.get(entries_field, []):
            asked = entry.get(field, NOT_REQUESTED) != NOT_REQUESTED
            if asked and entry.get(key) is not None:
                entry = {**entry, field: _operations(access, ctx, kind, entry[key], supported)}
            entries.append(entry)
        return {**answer, entries_field: entries}

    return after


def _cluster_operations(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    field = "cluster_authorized_operations"
    if answer.get(field, NOT_REQUESTED) == NOT_REQUESTED:
        return answer
    ops = _operations(access, ctx, _CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS)
    return {**answer, field: ops}


def _then(*afters: After) -> After:
    def after(
        request: Any,
        version: int,
        ctx: RequestContext,
        access: AccessControl,
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        for step in afters:
            answer = step(request, version, ctx, access, answer)
        return answer

    return after


_GROUP_OPERATIONS = _with_operations("authorized_operations", _GROUP, GROUP_OPERATIONS, "group_id")


RULES: dict[int, Rule] = {
    11: Rule(
        _group_read(
            lambda r: {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "generation_id": -1,
                "member_id": "",
                "leader": "",
                "members": [],
            }
        )
    ),
    14: Rule(
        _group_read(lambda r: {"throttle_time": 0, "error_code": GROUP_DENIED, "assignment": b""})
    ),
    12: Rule(_group_read(lambda r: {"throttle_time": 0, "error_code": GROUP_DENIED})),
    13: Rule(
        _group_read(lambda r: {"throttle_time": 0, "error_code": GROUP_DENIED, "members": []})
    ),
    68: Rule(
        _group_read(
            lambda r: {
                "throttle_time": 0,
                "error_code": GROUP_DENIED,
                "error_message": "Not authorized to access group",
                "member_epoch": -1,
                "heartbeat_interval": 0,
            }
        )
    ),
    8: Rule(_offset_commit),
    9: Rule(_offset_fetch, _offset_fetch_topics),
    19: Rule(_per_entry("topics", "topics", _create_topic)),
    20: Rule(
        _per_entry(lambda v: "topics" if v >= 6 else "topic_names", "responses", _delete_topic)
    ),
    37: Rule(
        _per_entry(
            "topics",
            "results",
            _topic_operation(
                Operation.ALTER,
                lambda t: {"name": t.name, "error_code": TOPIC_DENIED, "error_message": None},
            ),
        )
    ),
    21: Rule(
        _per_entry(
            "topics",
            "topics",
            _topic_operation(
                Operation.DELETE,
                lambda t: {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "low_watermark": -1,
                            "error_code": TOPIC_DENIED,
                        }
                        for p in t.partitions
                    ],
                },
            ),
        )
    ),
    32: Rule(
        _per_entry(
            "resources", "results", _config_resource(Operation.DESCRIBE_CONFIGS, with_configs=True)
        )
    ),
    33: Rule(
        _per_entry(
            "resources", "responses", _config_resource(Operation.ALTER_CONFIGS, with_configs=False)
        )
    ),
    44: Rule(
        _per_entry(
            "resources", "responses", _config_resource(Operation.ALTER_CONFIGS, with_configs=False)
        )
    ),
    10: Rule(_find_coordinator),
    15: Rule(
        _per_group("groups", "groups", Operation.DESCRIBE, _described_denied), _GROUP_OPERATIONS
    ),
    69: Rule(
        _per_group("group_ids", "groups", Operation.DESCRIBE, _described_denied), _GROUP_OPERATIONS
    ),
    22: Rule(_init_producer_id),
    60: Rule(after=_cluster_operations),
    42: Rule(
        _per_group(
            "groups_names",
            "results",
            Operation.DELETE,
            lambda g: {"group_id": g, "error_code": GROUP_DENIED},
        )
    ),
    47: Rule(_offset_delete),
    16: Rule(after=_list_groups),
    3: Rule(
        after=_then(
            _metadata,
            _with_operations("topic_authorized_operations", _TOPIC, TOPIC_OPERATIONS, "name"),
            _cluster_operations,
        )
    ),
    75: Rule(after=_describe_topic_partitions),
    0: Rule(_per_topic(Operation.WRITE, "topic_data", _produce_denied, "responses")),
    1: Rule(_per_topic(Operation.READ, "topics", _fetch_denied, "responses")),
    2: Rule(_per_topic(Operation.DESCRIBE, "topics", _list_offsets_denied, "topics")),
    50: Rule(_scram_describe),
    51: Rule(_scram_alter),
    client_balance.HEARTBEAT_KEY: Rule(_client_balance_group_read),
    client_balance.REGISTER_KEY: Rule(_partition_register),
    client_balance.RELEASE_KEY: Rule(_partition_release),
    client_balance.DESCRIBE_KEY: Rule(_client_balance_describe),
    **_CLUSTER_ADMIN_RULES,
}
