"""The member side of Kafka's group protocols as pure state machines (sans-I/O).

`ClassicMember` speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat, eager or KIP-429
cooperative) from the state `classic_membership` keeps, `consumer.ConsumerMember` KIP-848's;
what they share with the shell (one request in flight, backoff, the lease, announced changes)
is `base.MemberBase`. Their lifecycle is one table (`lifecycle`), their reactions to errors
another (`actions`); what a commit's answer came to is `messages.CommitOutcome`.
`coordinator.clients.member.GroupMember` is the asyncio shell that runs one on a socket.
"""

from rebalance.member.actions import Action, Api, action_for
from rebalance.member.classic import ClassicMember
from rebalance.member.classic_membership import MemberConfig
from rebalance.member.embedded import ConsumerEmbedded, EmbeddedProtocol
from rebalance.member.lifecycle import MemberState
from rebalance.member.messages import (
    Assigned,
    Change,
    CommitOutcome,
    CommitRefused,
    DescribeTopics,
    FindCoordinator,
    FindCoordinatorReply,
    Lost,
    MemberFailed,
    Revoked,
    TopicsDescribed,
)

__all__ = [
    "Action",
    "Api",
    "Assigned",
    "Change",
    "ClassicMember",
    "CommitOutcome",
    "CommitRefused",
    "ConsumerEmbedded",
    "DescribeTopics",
    "EmbeddedProtocol",
    "FindCoordinator",
    "FindCoordinatorReply",
    "Lost",
    "MemberConfig",
    "MemberFailed",
    "MemberState",
    "Revoked",
    "TopicsDescribed",
    "action_for",
]
