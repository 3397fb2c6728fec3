"""Authorized-operation bitfields (KIP-430), as a Kafka broker without an authorizer gives them.

DescribeGroups (v3+), Metadata (v8+) and DescribeCluster answer `include_*_authorized_operations`
with a 32-bit field, bit n set for ACL operation code n. Kafka computes it from its authorizer;
with none configured every operation its ACLs support for the resource type is allowed
(`AuthHelper.authorizedOperations`, `AclEntry.supportedOperations`). This node has no
authorizer, so those are the answers. INT32_MIN means "not requested" (or not given, as for a
group described with an error).
"""

from __future__ import annotations

NOT_REQUESTED = -(2**31)

# Kafka's AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bitfield(*operations: int) -> int:
    return sum(1 << op for op in set(operations))


GROUP_OPERATIONS = bitfield(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
TOPIC_OPERATIONS = bitfield(
    READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS
)
CLUSTER_OPERATIONS = bitfield(
    CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE
)


def if_requested(requested: object, operations: int) -> int:
    return operations if requested else NOT_REQUESTED
