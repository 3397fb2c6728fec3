"""The resources protocol: weighted sticky shares, KIP-429 withholding per member, and the
protocol run by pure members against the pure coordinator (any protocol type will do)."""

from __future__ import annotations

import json

import pytest
from member_wiring import Cluster

from rebalance.classic.replies import JoinGroupMember
from rebalance.member.embedded import EmbeddedProtocolError
from rebalance.member.resources import ResourceEmbedded, item, names

TENANTS = tuple(f"tenant-{i:02d}" for i in range(12))


def join_member(member_id: str, protocol: ResourceEmbedded, owned: tuple[str, ...] = (),
                generation: int = -1) -> JoinGroupMember:  # fmt: skip
    ((_, metadata),) = protocol.protocols(frozenset(map(item, owned)), (), generation)
    return JoinGroupMember(member_id, None, metadata)


def shares(protocol: ResourceEmbedded, members: list[JoinGroupMember]) -> dict[str, set[str]]:
    out = protocol.assign("weighted-sticky", members, {})
    return {m: set(names(protocol.decode(data))) for m, data in out.items()}


def test_shares_follow_the_weights() -> None:
    members = [join_member(f"m{w}", ResourceEmbedded(TENANTS, weight=w)) for w in (1, 2, 3)]
    result = shares(ResourceEmbedded(TENANTS), members)
    assert {m: len(s) for m, s in result.items()} == {"m1": 2, "m2": 4, "m3": 6}
    assert set().union(*result.values()) == set(TENANTS)


def test_a_member_only_gets_what_it_listed() -> None:
    a = join_member("a", ResourceEmbedded(TENANTS[:2]))
    b = join_member("b", ResourceEmbedded(TENANTS))
    result = shares(ResourceEmbedded(TENANTS), [a, b])
    assert result["a"] <= set(TENANTS[:2]) and result["a"] | result["b"] == set(TENANTS)


def test_what_moves_is_withheld_for_one_round_then_handed_over() -> None:
    protocol = ResourceEmbedded(TENANTS)
    old = join_member("a", protocol, owned=TENANTS, generation=1)
    new = join_member("b", protocol)
    first = shares(protocol, [old, new])
    assert first["b"] == set() and len(first["a"]) == 6  # a keeps six, six are withheld
    second = shares(protocol, [join_member("a", protocol, tuple(sorted(first["a"])), 2), new])
    assert len(second["b"]) == 6 and second["a"] == first["a"]


def test_eager_mode_hands_over_at_once() -> None:
    protocol = ResourceEmbedded(TENANTS, cooperative=False)
    old = join_member("a", protocol, owned=TENANTS, generation=1)
    result = shares(protocol, [old, join_member("b", protocol)])
    assert len(result["b"]) == 6


def test_bad_bytes_are_a_clear_error() -> None:
    with pytest.raises(EmbeddedProtocolError, match="not JSON"):
        ResourceEmbedded(TENANTS).decode(b"\x00\x01")
    with pytest.raises(EmbeddedProtocolError, match="bad weight"):
        shares(ResourceEmbedded(TENANTS), [JoinGroupMember("x", None, json.dumps(
            {"v": 1, "resources": [], "weight": 0}).encode())])  # fmt: skip
    with pytest.raises(ValueError, match="weight"):
        ResourceEmbedded(TENANTS, weight=0)


def test_instances_share_resources_through_the_coordinator_without_overlap() -> None:
    cluster = Cluster({})
    shared: list[str] = []

    def check(name: str, change: object) -> None:
        owned = [w.member.owned for w in cluster.members.values()]
        assert sum(len(o) for o in owned) == len(frozenset().union(*owned)), owned
        shared.append(name)

    cluster.on_change = check
    for name, weight in (("a", 1), ("b", 2), ("c", 3)):
        cluster.add(name, group="svc", protocol=ResourceEmbedded(TENANTS, weight=weight))
        cluster.run(2000)
    counts = {n: len(w.member.owned) for n, w in cluster.members.items()}
    assert counts == {"a": 2, "b": 4, "c": 6}
    assert cluster.harness.core.groups()["svc"].protocol_type == "resources"
    cluster.members["c"].member.close()
    cluster.run(3000)
    counts = {n: len(w.member.owned) for n, w in cluster.members.items()}
    assert counts == {"a": 4, "b": 8, "c": 0}
    assert shared
