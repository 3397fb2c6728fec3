"""AlterReplicaLogDirs (key 34, KIP-113): move partitions to another log directory.

Versions: v1 the oldest Kafka 4 serves (KIP-896 dropped v0); v2 flexible. The Java admin
client's `alterReplicaLogDirs` and `kafka-reassign-partitions.sh` with log dirs send it.

This node has one log directory, its data dir, and every partition is in it: a partition asked
into that directory answers NONE (it is there already, nothing moves), into any other path
LOG_DIR_NOT_FOUND, and an unknown topic or partition (in the right directory)
UNKNOWN_TOPIC_OR_PARTITION, as a Kafka broker with one log dir answers. The answer has one
entry per topic, its partitions from every directory asked. Without ALTER on the cluster (when
an authorizer runs) every partition is refused CLUSTER_AUTHORIZATION_FAILED
(`coordinator.node.authorization`).
"""

from __future__ import annotations

import os
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.apis.metadata import partition_count
from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 34
VERSIONS = range(1, 3)


def _code(path: str, topic: str, partition: int, ctx: RequestContext) -> ErrorCode:
    if os.path.realpath(path) != os.path.realpath(ctx.broker.data_dir):
        return ErrorCode.log_dir_not_found
    count = partition_count(topic, ctx)
    if count is None or not 0 <= partition < count:
        return ErrorCode.unknown_topic_or_partition
    return ErrorCode.none


def results(request: Any, code_of: Any) -> dict[str, Any]:
    """The answer with `code_of(path, topic, partition)` for each partition, grouped by topic."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for directory in request.dirs:
        for topic in directory.topics:
            name = str(topic.name)
            by_topic.setdefault(name, []).extend(
                {
                    "partition_index": int(p),
                    "error_code": code_of(str(directory.path), name, int(p)),
                }
                for p in topic.partitions
            )
    return {
        "throttle_time": 0,
        "results": [{"topic_name": n, "partitions": p} for n, p in by_topic.items()],
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return results(request, lambda path, topic, partition: _code(path, topic, partition, ctx))
