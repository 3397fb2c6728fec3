"""An answer of either side of a differential run as the fields that must agree (`Answer`), and
as one line of text: member ids by their names in that side's `View`, metadata by the label of
the JoinGroup that carried it, the run's topic as `t`; throttle times, client ids and hosts
left out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.conformance.side_view import View
from rebalance.classic.replies import (
    HeartbeatReply,
    JoinGroupReply,
    LeaveGroupReply,
    SyncGroupReply,
)
from rebalance.consumer_group.replies import ConsumerGroupDescribeReply, ConsumerGroupHeartbeatReply
from rebalance.replies import DescribeGroupsReply, OffsetCommitReply, OffsetFetchReply

Answer = dict[str, str]


class Normaliser:
    """Reads the replies of one run: `labels` the JoinGroup metadata sent (bytes to
    `slot:protocol`), `topic_names` the ids of the run's topics."""

    def __init__(self, labels: Mapping[bytes, str], topic_names: Mapping[str, str]) -> None:
        self._labels = labels
        self._topic_names = topic_names

    def normalise(self, reply: object, view: View) -> Answer:
        if isinstance(reply, JoinGroupReply):
            return {
                "error": _err(reply.error),
                "generation": str(reply.generation_id),
                "protocol": _protocol(reply.protocol_type, reply.protocol_name),
                "leader": view.name(reply.leader),
                "member": view.name(reply.member_id),
                "members": self.members_text(reply.members, view),
            }
        if isinstance(reply, SyncGroupReply):
            return {
                "error": _err(reply.error),
                "assignment": reply.assignment.decode(errors="replace"),
                "protocol": _protocol(reply.protocol_type, reply.protocol_name),
            }
        if isinstance(reply, HeartbeatReply):
            return {"error": _err(reply.error)}
        if isinstance(reply, LeaveGroupReply):
            members = ",".join(f"{view.name(m.member_id)}:{_err(m.error)}" for m in reply.members)
            return {"error": _err(reply.error), "members": members}
        if isinstance(reply, OffsetCommitReply):
            return {f"p{p}": _err(code) for _, partitions in reply.topics for p, code in partitions}
        if isinstance(reply, OffsetFetchReply):
            answer = {"error": _err(reply.error)}
            for _, found in reply.topics:
                for o in found:
                    answer[f"p{o.partition}"] = f"{o.offset}" + (
                        "" if o.error.name == "NONE" else f"/{_err(o.error)}"
                    )
            return answer
        if isinstance(reply, ConsumerGroupHeartbeatReply):
            assigned = (
                "unchanged" if reply.assignment is None
                else " ".join(f"{'t' if t in self._topic_names else t}:{sorted(ps)}"
                              for t, ps in sorted(reply.assignment))
            )  # fmt: skip
            return {
                "error": _err(reply.error),
                "member": view.name(reply.member_id or ""),
                "epoch": str(reply.member_epoch),
                "interval": str(reply.heartbeat_interval_ms),
                "assignment": assigned if not reply.error else "",
            }
        if isinstance(reply, ConsumerGroupDescribeReply):
            return self._consumer_group_described(reply, view)
        assert isinstance(reply, DescribeGroupsReply)
        (g,) = reply.groups
        described = sorted(
            f"{view.name(m.member_id)}"
            f"[{self._labels.get(m.metadata, m.metadata.hex()) if m.metadata else ''}"
            f"|{m.assignment.decode(errors='replace')}]"
            for m in g.members
        )
        return {
            "error": _err(g.error),
            "state": g.state,
            "protocol": _protocol(g.protocol_type, g.protocol_data),
            "members": ",".join(described),
        }

    def _consumer_group_described(self, reply: ConsumerGroupDescribeReply, view: View) -> Answer:
        """Epochs, assignor and each member's epoch, assignment and target (not its client id
        and host: the model's requests come from no connection)."""
        (g,) = reply.groups

        def assigned(assignment: Any) -> str:
            return " ".join(
                f"{'t' if topic_id in self._topic_names else name}:{sorted(ps)}"
                for topic_id, name, ps in sorted(assignment)
            )

        members = sorted(
            f"{view.name(m.member_id)}[{m.member_epoch}|{assigned(m.assignment)}"
            f"|{assigned(m.target_assignment)}{'|classic' if m.classic else ''}]"
            for m in g.members
        )
        return {
            "error": _err(g.error),
            "state": g.state,
            "epochs": f"{g.group_epoch}/{g.assignment_epoch}" if not g.error else "",
            "assignor": g.assignor,
            "members": ",".join(members),
        }

    def members_text(self, members: Any, view: View) -> str:
        return ",".join(
            sorted(
                f"{view.name(m.member_id)}[{self._labels.get(m.metadata, m.metadata.hex())}]"
                for m in members
            )
        )


def text(answer: Answer) -> str:
    return " ".join(f"{k}={v}" for k, v in answer.items() if v != "")


def _protocol(protocol_type: str | None, name: str | None) -> str:
    """`type/name` as a reply carries them; "" (not shown) when it carries neither."""
    return f"{protocol_type or ''}/{name or ''}" if protocol_type or name else ""


def _err(code: Any) -> str:
    return str(code.name).lower()
