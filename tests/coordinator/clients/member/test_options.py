"""What `GroupMember`'s options make: bootstrap servers as HOST:PORT, callbacks that can be called,
and the pure member of the protocol asked for with its settings; each bad option refused at
construction with a one-line error."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.clients.member.options import build_member, parse_servers, require_callable
from rebalance.member import ClassicMember
from rebalance.member.consumer import ConsumerMember

DEFAULTS: dict[str, Any] = dict(
    topic_regex=None,
    protocol=None,
    group_protocol="classic",
    assignors=("range",),
    server_assignor=None,
    group_instance_id=None,
    session_timeout_ms=10_000,
    rebalance_timeout_ms=20_000,
    heartbeat_interval_ms=None,
    retry_backoff_ms=50,
    client_id="c",
)


def options(**changed: Any) -> dict[str, Any]:
    return {**DEFAULTS, **changed}


def test_bootstrap_servers_are_host_port_in_a_string_or_a_list() -> None:
    assert parse_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_servers(["a:1"]) == [("a", 1)]
    for bad in ("a", "a:x", ":1"):
        with pytest.raises(ValueError, match="bootstrap server must be HOST:PORT"):
            parse_servers(bad)
    with pytest.raises(ValueError, match="no bootstrap servers"):
        parse_servers([])


def test_a_callback_that_cannot_be_called_is_refused() -> None:
    require_callable("on_assigned", None)
    require_callable("on_assigned", print)
    with pytest.raises(TypeError, match="on_lost must be a function"):
        require_callable("on_lost", 3)


def test_the_classic_protocol_makes_a_classic_member_with_java_s_heartbeat_default() -> None:
    member = build_member("g", ["t"], **options())
    assert isinstance(member, ClassicMember)
    assert member.config.heartbeat_interval_ms == 3_000
    assert (member.config.session_timeout_ms, member.config.client_id) == (10_000, "c")
    given = build_member("g", ["t"], **options(heartbeat_interval_ms=500))
    assert given.config.heartbeat_interval_ms == 500


def test_the_consumer_protocol_makes_a_kip_848_member() -> None:
    member = build_member("g", [], **options(group_protocol="consumer", topic_regex="t.*"))
    assert isinstance(member, ConsumerMember)
    assert member.config.topic_regex == "t.*" and member.config.rebalance_timeout_ms == 20_000


def test_options_of_the_other_protocol_are_refused() -> None:
    with pytest.raises(ValueError, match="heartbeat_interval_ms is the coordinator's"):
        build_member("g", ["t"], **options(group_protocol="consumer", heartbeat_interval_ms=1))
    with pytest.raises(ValueError, match="topic_regex needs group_protocol='consumer'"):
        build_member("g", ["t"], **options(topic_regex="t.*"))
    with pytest.raises(ValueError, match="group_protocol must be 'classic' or 'consumer'"):
        build_member("g", ["t"], **options(group_protocol="eager"))
