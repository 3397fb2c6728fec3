"""What AlterConfigs and IncrementalAlterConfigs share: apply a change to one resource.

Only topic configs can change (broker settings are read-only on this node: set them at start;
a deliberate difference from Kafka's dynamic broker configs). A change is validated in full
before anything is stored, so a bad config leaves the topic as it was; `validate_only` stops
after the validation. Duplicate resources in one request all get INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.config_resources import (
    BROKER,
    TOPIC,
    ResourceError,
    find_topic,
    is_this_broker,
    repeated,
    resource_answer,
    unsupported,
)
from coordinator.node.contract import RequestContext
from coordinator.node.topic_admin import TopicChangeRefused, UnknownTopicError
from coordinator.partition_log.topic_configs import InvalidConfigError
from coordinator.partition_log.topics import Topic

NewConfigs = Callable[[Topic, Any], dict[str, str]]
"""(topic, requested resource) -> the topic's whole set of overrides after the change; raises
`InvalidConfigError` or `ResourceError`."""


async def _change(
    resource: Any, new_configs: NewConfigs, validate_only: bool, ctx: RequestContext
) -> None:
    resource_type, name = int(resource.resource_type), str(resource.resource_name)
    if resource_type == BROKER:
        is_this_broker(ctx.broker, name)
        raise ResourceError(
            ErrorCode.invalid_request,
            "Broker settings cannot be changed while the node runs; restart it with other "
            "--set values.",
        )
    if resource_type != TOPIC:
        raise unsupported(resource_type)
    topic = find_topic(ctx.broker, name)
    try:
        configs = new_configs(topic, resource)
    except InvalidConfigError as exc:
        raise ResourceError(ErrorCode.invalid_config, str(exc)) from None
    if not validate_only:
        try:
            await ctx.broker.topic_admin.set_configs(topic, configs)
        except UnknownTopicError as exc:  # deleted on another node a moment ago
            raise ResourceError(ErrorCode.unknown_topic_or_partition, str(exc)) from None
        except TopicChangeRefused as exc:
            raise ResourceError(ErrorCode.request_timed_out, str(exc)) from None


async def alter_each(request: Any, new_configs: NewConfigs, ctx: RequestContext) -> dict[str, Any]:
    """The response of either API: each resource changed, or its error."""
    duplicates = repeated(request.resources)
    answers = []
    for resource in request.resources:
        code, message = ErrorCode.none, None
        try:
            if (int(resource.resource_type), str(resource.resource_name)) in duplicates:
                raise ResourceError(ErrorCode.invalid_request, "Duplicate resource in request.")
            await _change(resource, new_configs, bool(request.validate_only), ctx)
        except ResourceError as exc:
            code, message = exc.code, exc.message
        answers.append(resource_answer(resource, code, message))
    return {"throttle_time": 0, "responses": answers}
