"""The parent's mirror of what the child holds of one group, and what a new `TargetInputs`
changes in it: the `messages.Delta` to send, worked out in C-level passes (the sending thread
runs it, and the loop waits for the interpreter lock at most one pass long)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress
from operator import is_not, itemgetter, ne
from typing import NamedTuple

from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment
from rebalance.consumer_group.target import TargetInputs
from rebalance.topics import TopicMetadata

_first = itemgetter(0)


class Change(NamedTuple):
    """What the child must be sent so that its copy is a group's inputs."""

    metadata: TopicMetadata | None  # None: the same object as the child's
    removed: list[str]
    upserts: list[MemberInputs]  # replaced in place or appended, in this order
    order: list[str] | None  # the members' order, when it is not what the upserts give
    targets: dict[str, Assignment | None]  # None: dropped


@dataclass
class Mirror:
    """What the child holds of one group, as the parent last sent it."""

    metadata: TopicMetadata | None = None
    members: dict[str, MemberInputs] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    #: one tuple per distinct subscription sent
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)

    def update(self, inputs: TargetInputs) -> Change:
        """The mirror brought up to `inputs`, and what that changed: members by equality,
        targets by identity (records never edit an assignment tuple, they replace it, so an
        identical object is an unchanged target; a false difference only costs a resend), the
        metadata by identity."""
        metadata = None if inputs.metadata is self.metadata else inputs.metadata
        self.metadata = inputs.metadata
        # members: removed, then replaced in place or appended (as the child applies them)
        known = self.members
        members = inputs.members
        ids = list(map(_first, members))
        present = dict(zip(ids, members, strict=True))
        removed = [member_id for member_id in known if member_id not in present]
        for member_id in removed:
            del known[member_id]
        upserts = list(compress(members, map(ne, map(known.get, ids), members)))
        for member in upserts:
            known[member.member_id] = member
        if upserts:
            # Equal subscriptions sent as one tuple: members usually share one, but each holds
            # its own copy (decoded from its own request), and a group's first delta would
            # otherwise carry 10,000 x 100 topic names.
            shared = self.subscriptions
            upserts = [
                m._replace(topic_names=shared.setdefault(m.topic_names, m.topic_names))
                for m in upserts
            ]
        order: list[str] | None = None
        if list(known) != ids:
            order = ids  # a member left and came back: its place moved
            self.members = present
        # targets: by identity
        held = self.targets
        new_targets = inputs.targets
        targets: dict[str, Assignment | None] = {
            member_id: None for member_id in held if member_id not in new_targets
        }
        for member_id in targets:
            del held[member_id]
        keys = list(new_targets)
        values = list(new_targets.values())
        for member_id in compress(keys, map(is_not, map(held.get, keys), values)):
            targets[member_id] = held[member_id] = new_targets[member_id]
        return Change(metadata, removed, upserts, order, targets)
