"""The conditions on a broker under which a scenario's expectations hold: its settings (read
with DescribeConfigs, or given with `--assume`) and the request versions it speaks. Each is a
function of the broker giving the reason it does not hold, or None."""

from __future__ import annotations

import importlib.util

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.scenario import Assumption
from coordinator.errors import install_hint
from coordinator.wire.api_keys import ApiKey


def setting_at_most(key: str, limit: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        value = broker.setting_ms(key)
        if value is None:
            return f"{key} unknown (the broker has no DescribeConfigs: pass --assume {key}=...)"
        return None if value <= limit else f"{key}={value} > {limit}: the scenario would be slow"

    return check


def setting_at_least(key: str, floor: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        value = broker.setting_ms(key)
        if value is None:
            return f"{key} unknown (pass --assume {key}=...)"
        return None if value >= floor else f"{key}={value} < {floor}: nothing to observe"

    return check


#: The shortest offsets cleanup interval a differential run is reliable under: a cleanup deletes
#: a run's empty groups (one forming, between a member's two joins) behind the model's back.
RELIABLE_CLEANUP_MS = 60_000


def no_quick_offsets_cleanup(broker: BrokerUnderTest) -> str | None:
    """A differential run's condition (an unknown setting is taken as Kafka's 10 minutes)."""
    key = "offsets.retention.check.interval.ms"
    value = broker.setting_ms(key)
    if value is None or value >= RELIABLE_CLEANUP_MS:
        return None
    return (
        f"{key}={value} < {RELIABLE_CLEANUP_MS}: the broker's offsets cleanup would delete the "
        "runs' empty groups mid-run, which the model does not do: unreliable"
    )


def version_at_least(api_key: int, version: int) -> Assumption:
    def check(broker: BrokerUnderTest) -> str | None:
        have = broker.versions.get(api_key)
        if have is not None and have >= version:
            return None
        return f"needs api {api_key} v{version}+ (the broker offers {have})"

    return check


def hypothesis_installed(broker: BrokerUnderTest) -> str | None:
    if importlib.util.find_spec("hypothesis") is None:
        return f"needs Hypothesis: {install_hint('conformance')}"
    return None


def advertised_at_least(api_key: int, version: int) -> Assumption:
    """Like `version_at_least`, for versions above the cap the scenarios speak by default."""

    def check(broker: BrokerUnderTest) -> str | None:
        have = broker.advertised.get(api_key)
        if have is not None and have >= version:
            return None
        return f"needs api {api_key} v{version}+ (the broker offers {have})"

    return check


def version_between(api_key: int, low: int, high: int) -> Assumption:
    """The broker speaks some version of `api_key` within [low, high]."""

    def check(broker: BrokerUnderTest) -> str | None:
        oldest, newest = broker.oldest.get(api_key), broker.advertised.get(api_key)
        if oldest is not None and newest is not None and oldest <= high and newest >= low:
            return None
        return f"needs api {api_key} between v{low} and v{high} (the broker has {oldest}-{newest})"

    return check


QUICK_SESSIONS = setting_at_most("group.min.session.timeout.ms", 10_000)
QUICK_DELAY = setting_at_most("group.initial.rebalance.delay.ms", 5_000)
#: KIP-394's two-step join (JoinGroup v4, Kafka 2.2) is what every scenario's members speak.
BASE = (QUICK_SESSIONS, QUICK_DELAY, version_at_least(ApiKey.JOIN_GROUP, 4))
