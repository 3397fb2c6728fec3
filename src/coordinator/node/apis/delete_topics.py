"""DeleteTopics (key 20): delete topics by name, or (v6) by topic id.

Versions: kio's floor is v1 (throttle_time); v4 flexible; v5 error_message; v6 topics given as
(name, topic_id) pairs, one of them set, and answered with both. aiokafka sends v1-v3,
kafka-python v3, librdkafka v4.

A deleted topic's logs and metadata go at once (Metadata no longer lists it; creating the name
again gives a new topic id), then every group's committed offsets for it are removed, as Kafka's
group coordinator does when partitions are deleted; the answer waits for both. Errors, per
topic as Kafka gives them: a name or id asked twice INVALID_REQUEST; both a name and an id
INVALID_REQUEST; an unknown name UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID;
`delete.topic.enable=false` TOPIC_DELETION_DISABLED.

DIFFERS: the internal `__consumer_offsets` is refused with INVALID_TOPIC_EXCEPTION (the message
Kafka's topic tool gives). Kafka's brokers would delete it, and every group's offsets with it;
here the coordinator's records are not in that topic (see `coordinator.partition_log.internal`).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.constants import uuid_zero

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization import Rule
from coordinator.node.authorization.checks import TOPIC, TOPIC_DENIED, may, per_entry, topic_name
from coordinator.node.contract import Broker, RequestContext, ResponseValue
from coordinator.node.topic_admin import TopicChangeRefused, UnknownTopicError
from coordinator.partition_log.internal import InternalTopic
from coordinator.partition_log.topics import Topic
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import Operation

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = range(1, 7)

NAME_OR_ID = "A topic must be given by its name or by its id (one of them)."
UNKNOWN_ID = "This server does not host this topic ID."
UNKNOWN_NAME = "This server does not host this topic-partition."


def _requested(request: Any, api_version: int) -> list[tuple[str | None, uuid.UUID | None]]:
    if api_version < 6:
        return [(str(name), None) for name in request.topic_names]
    return [
        (
            None if t.name is None else str(t.name),
            None if t.topic_id in (None, uuid_zero) else t.topic_id,
        )
        for t in request.topics
    ]


def _answer(
    name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": topic_id or uuid_zero,
        "error_code": code,
        "error_message": message,
    }


def _internal(name: str | None, topic_id: uuid.UUID | None, broker: Broker) -> InternalTopic | None:
    if topic_id is not None:
        return broker.internal_topics.by_id(topic_id)
    return broker.internal_topics.get(name or "")


def _unknown(topic_id: uuid.UUID | None) -> ErrorCode:
    return ErrorCode.unknown_topic_or_partition if topic_id is None else ErrorCode.unknown_topic_id


def _unknown_message(topic_id: uuid.UUID | None) -> str:
    return UNKNOWN_NAME if topic_id is None else UNKNOWN_ID


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    broker = ctx.broker
    requested = _requested(request, api_version)
    names = Counter(name for name, _ in requested if name is not None)
    ids = Counter(topic_id for _, topic_id in requested if topic_id is not None)
    answers = []
    deleted: list[Topic] = []
    for name, topic_id in requested:
        topic = broker.topics.by_id(topic_id) if topic_id else broker.topics.get(name or "")
        if topic is None and (name is None) != (topic_id is None):
            topic = await broker.topic_admin.find(name, topic_id)  # made elsewhere just now
        if (name is None) == (topic_id is None):
            answer = _answer(name, topic_id, ErrorCode.invalid_request, NAME_OR_ID)
        elif name is not None and names[name] > 1:
            answer = _answer(name, None, ErrorCode.invalid_request, "Duplicate topic name.")
        elif topic_id is not None and ids[topic_id] > 1:
            answer = _answer(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")
        elif (internal := _internal(name, topic_id, broker)) is not None:
            answer = _answer(
                internal.name,
                internal.topic_id,
                ErrorCode.invalid_topic_exception,
                f"Topic {internal.name} is a kafka internal topic and is not allowed to be "
                f"marked for deletion.",
            )
        elif topic is None and topic_id is not None:
            answer = _answer(None, topic_id, ErrorCode.unknown_topic_id, UNKNOWN_ID)
        elif topic is None:
            answer = _answer(name, None, ErrorCode.unknown_topic_or_partition, UNKNOWN_NAME)
        elif not broker.config.delete_topic_enable:
            answer = _answer(topic.name, topic.topic_id, ErrorCode.topic_deletion_disabled,
                             "Topic deletion is disabled.")  # fmt: skip
        else:
            try:
                await broker.topic_admin.delete(topic)
                deleted.append(topic)
                answer = _answer(topic.name, topic.topic_id, ErrorCode.none)
            except UnknownTopicError:  # deleted on another node a moment ago
                answer = _answer(name, topic_id, _unknown(topic_id), _unknown_message(topic_id))
            except TopicChangeRefused as exc:
                answer = _answer(topic.name, topic.topic_id, ErrorCode.request_timed_out, str(exc))
        answers.append(answer)
    if deleted:
        await broker.topics.announce_deleted([topic.name for topic in deleted])
    return {"throttle_time": 0, "responses": answers}


def _denial(topic: Any, ctx: RequestContext, access: AccessControl) -> Any:
    name = topic if isinstance(topic, str) else topic_name(topic, ctx)
    if name is None or may(access, ctx, Operation.DELETE, TOPIC, name):
        return None
    topic_id = getattr(topic, "topic_id", None)
    return {
        "name": name,
        "topic_id": topic_id or uuid.UUID(int=0),
        "error_code": TOPIC_DENIED,
        "error_message": None,
    }


#: DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED for it.
AUTHORIZATION = Rule(
    per_entry(lambda v: "topics" if v >= 6 else "topic_names", "responses", _denial)
)
