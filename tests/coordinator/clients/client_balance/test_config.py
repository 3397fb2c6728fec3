"""A client-balance node's settings: TubeMQ's defaults, the metadata interval's minimum enforced
(an observation of spec §D.9 not repeated), and a bad offset reset refused in one line."""

from __future__ import annotations

import pytest

from coordinator.clients.client_balance.config import ClientBalanceConfig


def test_the_metadata_interval_minimum_is_enforced() -> None:
    config = ClientBalanceConfig("127.0.0.1:9092", "g", meta_check_interval_ms=100)
    assert config.meta_check_interval_ms == 5000  # TubeMQ's setter clamped, then overwrote
    assert (
        ClientBalanceConfig("h:1", "g", meta_check_interval_ms=7000).meta_check_interval_ms == 7000
    )


def test_an_offset_reset_other_than_earliest_or_latest_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^auto_offset_reset is earliest or latest$"):
        ClientBalanceConfig("h:1", "g", auto_offset_reset="none")
    assert ClientBalanceConfig("h:1", "g", auto_offset_reset="latest").auto_offset_reset == "latest"
