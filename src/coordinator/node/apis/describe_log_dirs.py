"""DescribeLogDirs (key 35): the node's log directory and the size of each partition in it.

Versions: v1 the oldest Kafka 4 serves (KIP-896 dropped v0); v2 flexible; v3 a top-level
error_code; v4 total_bytes and usable_bytes of the directory's file system; v5 the same as v4.
The Java admin client's `describeLogDirs` / `describeReplicaLogDirs` and `kafka-log-dirs.sh`
send it.

This node has one log directory, its data dir, holding every partition (so `offset_lag` is 0 and
no partition is a future replica). Asked for no topics in particular (`topics` null), it
describes every partition; asked for some, only those that exist, leaving unknown topics and
partitions out, as Kafka does. The internal `__consumer_offsets` is listed as Kafka lists it.
DIFFERS: its size is 0, since committed offsets live in the group store, not in that topic.
Without DESCRIBE on the cluster (when an authorizer runs) the answer is
CLUSTER_AUTHORIZATION_FAILED with no directories (`coordinator.node.authorization`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 35
VERSIONS = range(1, 6)


def _sizes(request: Any, ctx: RequestContext) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """(topic, [(partition, size in bytes)]) for each topic described."""
    broker = ctx.broker
    sizes: dict[str, list[tuple[int, int]]] = {
        topic.name: [(i, log.size_bytes) for i, log in enumerate(topic.partitions)]
        for topic in broker.topics
    }
    for internal in broker.internal_topics:
        sizes[internal.name] = [(i, 0) for i in range(internal.partition_count)]
    if request.topics is None:
        yield from sizes.items()
        return
    for asked in request.topics:
        held = dict(sizes.get(str(asked.topic), ()))
        found = [(int(p), held[int(p)]) for p in asked.partitions if int(p) in held]
        if found:
            yield str(asked.topic), found


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    data_dir = ctx.broker.data_dir
    disk = shutil.disk_usage(data_dir)
    topics = [
        {
            "name": name,
            "partitions": [
                {
                    "partition_index": index,
                    "partition_size": size,
                    "offset_lag": 0,
                    "is_future_key": False,
                }
                for index, size in partitions
            ],
        }
        for name, partitions in _sizes(request, ctx)
    ]
    result = {
        "error_code": ErrorCode.none,
        "log_dir": str(data_dir.resolve()),
        "topics": topics,
        "total_bytes": disk.total,
        "usable_bytes": disk.free,
    }
    return {"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]}
