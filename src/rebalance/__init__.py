"""rebalance: Kafka's consumer-group rebalance protocol as a pure, deterministic core.

The public surface: `GroupCoordinatorCore` (handlers returning `Result`s), the command and reply
values, records, `GroupState`, `ErrorCode`, `CoordinatorConfig` and `partition_for`, Kafka's
coordinator placement; `__version__` and `DISTRIBUTION`, the name pip installs these packages
by (`rebalance-kafka`). `rebalance.testing` has a manual clock, a manual timer and a harness.
"""

from rebalance.classic.commands import Heartbeat, JoinGroup, LeaveGroup, LeavingMember, SyncGroup
from rebalance.classic.records import GroupMetadataRecord
from rebalance.commands import (
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    ListGroups,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
)
from rebalance.config import ConfigError, CoordinatorConfig
from rebalance.core import GroupCoordinatorCore
from rebalance.distribution import DISTRIBUTION, __version__
from rebalance.effects import Cancel, Reply, Result, Schedule
from rebalance.errors import CoordinatorError, ErrorCode, IllegalTransition
from rebalance.lifecycle import GroupState
from rebalance.placement import java_string_hash, partition_for
from rebalance.records import OffsetCommitRecord, Record
from rebalance.rng import RandomSource, SplitMix64

__all__ = [
    "DISTRIBUTION",
    "Cancel",
    "CommitPartition",
    "CommitTopic",
    "ConfigError",
    "CoordinatorConfig",
    "CoordinatorError",
    "DeleteGroups",
    "DescribeGroups",
    "ErrorCode",
    "GroupCoordinatorCore",
    "GroupMetadataRecord",
    "GroupState",
    "Heartbeat",
    "IllegalTransition",
    "JoinGroup",
    "LeaveGroup",
    "LeavingMember",
    "ListGroups",
    "OffsetCommit",
    "OffsetCommitRecord",
    "OffsetDelete",
    "OffsetFetch",
    "RandomSource",
    "Record",
    "Reply",
    "Result",
    "Schedule",
    "SplitMix64",
    "SyncGroup",
    "__version__",
    "java_string_hash",
    "partition_for",
]
