"""The differential run's vocabulary: one client action per step, written as one line of text.

Members are named by slot: `a0 a1 a2` belong to group `a`, `b0 b1 b2` to group `b`; slot 2 of
each group is static (its instance id is its slot name). A step's text is what a failing run
prints and what `--replay` reads back, so a shrunk counterexample can be run again as is:

    join a0                     JoinGroup with the slot's member id ("" at first), range
    join a0 protocols=roundrobin,range
    join a0 fresh               a restarted consumer: the slot forgets its member id
    sync a0                     SyncGroup; the leader sends an assignment for every member
    heartbeat a0 [stale]        Heartbeat at the slot's generation (stale: one before)
    leave a0                    LeaveGroup
    commit a0 p1 42 [stale|simple]
                                OffsetCommit of offset 42 to partition 1 as the member (stale:
                                its generation minus one; simple: generation -1, no member id);
                                for c0-c2 OffsetCommit v9 with the member epoch (stale: minus one)
    fetch a                     OffsetFetch of the group's partitions
    describe a                  DescribeGroups (describe c: ConsumerGroupDescribe)
    beat c0 [join|leave|stale|regex]
                                ConsumerGroupHeartbeat (KIP-848) of group c's member: at its
                                epoch acknowledging what it was assigned; join: epoch 0 with
                                its subscription; leave: -1 (static c2: -2); stale: epoch - 1;
                                regex: epoch 0 subscribing with a regex (SubscribedTopicRegex)
                                that matches the run's topic, and no topic names
    wait 700                    (timed runs) let 700 ms pass, or a little more where a timer
                                falls due near the end (`coordinator.conformance.timing`)
"""

from __future__ import annotations

from dataclasses import dataclass

GROUPS = ("a", "b")
SLOTS = tuple(f"{g}{i}" for g in GROUPS for i in range(3))
#: A KIP-848 consumer group (ConsumerGroupHeartbeat) of its own: c2 is static here too.
CONSUMER_GROUP = "c"
CONSUMER_SLOTS = tuple(f"{CONSUMER_GROUP}{i}" for i in range(3))
BEAT_KINDS = ("", "join", "leave", "stale")
#: `beat c0 regex`: a join subscribing by regex, where the broker resolves regexes as the model
#: does (at once; see `coordinator.conformance.differential_session.Session.prepare`).
REGEX_KIND = "regex"
#: Protocol lists a member may offer (a group selects one every member supports).
PROTOCOL_CHOICES = (("range",), ("roundrobin", "range"), ("roundrobin",))
PARTITIONS = (0, 1)
COMMIT_MODES = ("member", "stale", "simple")


class StepSyntaxError(ValueError):
    """A replayed step that is not in the vocabulary."""


def group_of(slot: str) -> str:
    return slot[0]


def instance_of(slot: str) -> str | None:
    """Slot 2 of every group is a static member (KIP-345), the others dynamic."""
    return slot if slot.endswith("2") else None


@dataclass(frozen=True)
class Join:
    slot: str
    protocols: tuple[str, ...] = ("range",)
    fresh: bool = False

    def __str__(self) -> str:
        words = ["join", self.slot]
        if self.protocols != ("range",):
            words.append("protocols=" + ",".join(self.protocols))
        if self.fresh:
            words.append("fresh")
        return " ".join(words)


@dataclass(frozen=True)
class Sync:
    slot: str

    def __str__(self) -> str:
        return f"sync {self.slot}"


@dataclass(frozen=True)
class Heartbeat:
    slot: str
    stale: bool = False

    def __str__(self) -> str:
        return f"heartbeat {self.slot}" + (" stale" if self.stale else "")


@dataclass(frozen=True)
class Leave:
    slot: str

    def __str__(self) -> str:
        return f"leave {self.slot}"


@dataclass(frozen=True)
class Commit:
    slot: str
    partition: int
    offset: int
    mode: str = "member"

    def __str__(self) -> str:
        text = f"commit {self.slot} p{self.partition} {self.offset}"
        return text if self.mode == "member" else f"{text} {self.mode}"


@dataclass(frozen=True)
class Fetch:
    group: str

    def __str__(self) -> str:
        return f"fetch {self.group}"


@dataclass(frozen=True)
class Describe:
    group: str

    def __str__(self) -> str:
        return f"describe {self.group}"


@dataclass(frozen=True)
class Beat:
    slot: str
    kind: str = ""

    def __str__(self) -> str:
        return f"beat {self.slot}" + (f" {self.kind}" if self.kind else "")


@dataclass(frozen=True)
class Wait:
    ms: int

    def __str__(self) -> str:
        return f"wait {self.ms}"


Step = Join | Sync | Heartbeat | Leave | Commit | Fetch | Describe | Beat | Wait


def parse_steps(text: str) -> list[Step]:
    """Steps separated by newlines or semicolons; blank ones and `#` comments are skipped, and
    so are a printed run's step numbers and answers (`  3. sync a0  -> error=none ...`)."""
    steps = []
    for line in text.splitlines():
        for part in line.split(";"):
            words = part.split("#", 1)[0].split("->", 1)[0].split("<-", 1)[0].split()
            if words and words[0].rstrip(".").isdigit():
                words = words[1:]
            if words:
                steps.append(parse_step(" ".join(words)))
    return steps


def parse_step(line: str) -> Step:
    words = line.split()
    verb, args = words[0], words[1:]
    try:
        if verb == "wait":
            (ms,) = args
            if int(ms) < 0:
                raise ValueError(ms)
            return Wait(int(ms))
        if verb == "beat":
            slot, *kind = args
            if slot not in CONSUMER_SLOTS:
                raise StepSyntaxError(f"{line!r}: no consumer slot {slot!r} ({CONSUMER_SLOTS})")
            if (kind and kind[0] not in (*BEAT_KINDS, REGEX_KIND)) or len(kind) > 1:
                raise ValueError(line)
            return Beat(slot, kind[0] if kind else "")
        if verb in ("fetch", "describe"):
            (group,) = args
            if group not in (*GROUPS, CONSUMER_GROUP):
                raise StepSyntaxError(
                    f"{line!r}: no group {group!r} (groups: {(*GROUPS, CONSUMER_GROUP)})"
                )
            return Fetch(group) if verb == "fetch" else Describe(group)
        if verb == "commit" and args and args[0] in CONSUMER_SLOTS:
            slot, rest = args[0], args[1:]  # a KIP-848 member's commit (v9: its epoch)
        else:
            slot, rest = _slot(line, args[0]), args[1:]
        if verb == "join":
            protocols: tuple[str, ...] = ("range",)
            fresh = False
            for word in rest:
                if word == "fresh":
                    fresh = True
                elif word.startswith("protocols="):
                    protocols = tuple(word.removeprefix("protocols=").split(","))
                else:
                    raise ValueError(word)
            return Join(slot, protocols, fresh)
        if verb == "sync" and not rest:
            return Sync(slot)
        if verb == "heartbeat" and rest in ([], ["stale"]):
            return Heartbeat(slot, stale=bool(rest))
        if verb == "leave" and not rest:
            return Leave(slot)
        if verb == "commit" and len(rest) in (2, 3) and rest[0].startswith("p"):
            mode = rest[2] if len(rest) == 3 else "member"
            if mode not in COMMIT_MODES:
                raise ValueError(mode)
            return Commit(slot, int(rest[0][1:]), int(rest[1]), mode)
    except StepSyntaxError:
        raise
    except (ValueError, IndexError):
        pass
    raise StepSyntaxError(f"{line!r} is not a step (see `rebalance conformance --help`)")


def _slot(line: str, word: str) -> str:
    if word not in SLOTS:
        raise StepSyntaxError(f"{line!r}: no member slot {word!r} (slots: {' '.join(SLOTS)})")
    return word
