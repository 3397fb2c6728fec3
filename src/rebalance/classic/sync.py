"""SyncGroup (spec §1.5, §1.8): the leader hands out the assignment; everybody else waits for it.

A SyncGroup parks until the leader's assignment is durable (the record is in the `Result`
before the replies), then every parked member gets its own part. In STABLE a member simply gets
its current assignment again.

Deliberate difference from Kafka (marked `DIFFERS`): a parked SyncGroup superseded by a newer
one from the same member is answered with REBALANCE_IN_PROGRESS (Kafka never answers it):
connections answer in request order, so a reply that never comes blocks every later one.
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance.classic.commands import SyncGroup
from rebalance.classic.group import Group, Member
from rebalance.classic.rebalance import complete_sync, rearm_session
from rebalance.classic.replies import SyncGroupReply
from rebalance.classic.timers import sync_key
from rebalance.effects import Result
from rebalance.errors import CoordinatorError, ErrorCode
from rebalance.lifecycle import GroupState
from rebalance.state import CoordinatorState

_SUPERSEDED_SYNC = SyncGroupReply(ErrorCode.REBALANCE_IN_PROGRESS)
#: (An alias for the replies of a round, one per member: on Python 3.11 reading an enum member
#: goes through the enum class's `__getattr__` hook, four times a global's cost.)
_NONE = ErrorCode.NONE


def sync(state: CoordinatorState, cmd: SyncGroup, now_ms: int, token: Hashable) -> Result:
    result = Result()
    try:
        _sync(state, result, cmd, now_ms, token)
    except CoordinatorError as exc:
        result.reply(token, SyncGroupReply(exc.code))
    return result


def _sync(
    state: CoordinatorState, result: Result, cmd: SyncGroup, now_ms: int, token: Hashable
) -> None:
    group = state.groups.get(cmd.group_id)
    if group is None or group.empty:
        raise CoordinatorError(ErrorCode.UNKNOWN_MEMBER_ID)
    member = group.validate_member(cmd.member_id, cmd.group_instance_id)
    if cmd.generation_id != group.generation:
        raise CoordinatorError(ErrorCode.ILLEGAL_GENERATION)
    if cmd.protocol_type is not None and cmd.protocol_type != group.protocol_type:
        raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if (
        cmd.protocol_name is not None
        and group.protocol_name is not None
        and cmd.protocol_name != group.protocol_name
    ):
        raise CoordinatorError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.state is GroupState.JOINING:
        raise CoordinatorError(ErrorCode.REBALANCE_IN_PROGRESS)
    group.pending_sync.discard(member.member_id)
    if not group.pending_sync:
        # Everyone synced: the expiry could change nothing; Kafka cancels it here too.
        state.cancel(result, sync_key(group.group_id))
    if group.state is GroupState.STABLE:
        result.reply(token, _sync_reply(group, member))
        return
    # AWAITING_SYNC: park until the leader's assignment is durable.
    if member.sync_token is not None:
        result.reply(member.sync_token, _SUPERSEDED_SYNC)  # DIFFERS: Kafka never answers
    member.sync_token = token
    if group.leader_id == member.member_id:
        complete_sync(state, result, group, dict(cmd.assignments), now_ms)
        for m in group.members.values():  # every parked member gets its part
            parked = m.sync_token
            if parked is not None:
                result.reply(parked, _sync_reply(group, m))
                m.sync_token = None
                rearm_session(state, result, group, m, now_ms)


def _sync_reply(group: Group, member: Member) -> SyncGroupReply:
    # (Positional: the SyncGroups that come after the leader's all get theirs here.)
    return SyncGroupReply(_NONE, member.assignment, group.protocol_type, group.protocol_name)
