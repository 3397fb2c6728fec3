"""A client-balance node's settings: TubeMQ's `ConsumerConfig`, where it applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

CLIENT_VERSION: Final = "rebalance-client-balance/1"
#: TubeMQ's `TBaseConstants.META_VALUE_UNDEFINED`: the getters' answer when checks are off.
UNDEFINED: Final = -2
MIN_META_CHECK_INTERVAL_MS: Final = 5000


@dataclass(frozen=True)
class ClientBalanceConfig:
    """TubeMQ's `ConsumerConfig`, where it applies (defaults from `TClientConstants`)."""

    bootstrap: str
    group_id: str
    client_id: str = "rebalance-client-balance"
    session_timeout_ms: int = 30_000
    register_retries: int = 5
    register_fail_wait_ms: int = 1000
    meta_check_interval_ms: int = 10_000
    consume_ready_wait_ms: int = 90_000
    rebalance_confirm_wait_ms: int = 3000
    #: A partition refused with PARTITION_OCCUPIED is not tried again sooner (421 before).
    occupied_retry_backoff_ms: int = 5000
    fetch_max_wait_ms: int = 200
    max_batch_records: int = 100
    #: Where a partition with no committed offset and no bootstrap offset starts.
    auto_offset_reset: str = "earliest"
    #: True: confirm only moves the position; offsets are committed by `commit()` (TubeMQ's
    #: `pullConfirmInLocal`).
    confirm_in_local: bool = False

    def __post_init__(self) -> None:
        if self.meta_check_interval_ms < MIN_META_CHECK_INTERVAL_MS:
            # DIFFERS from TubeMQ's ConsumerConfig, which meant to clamp and did not (§D.9).
            object.__setattr__(self, "meta_check_interval_ms", MIN_META_CHECK_INTERVAL_MS)
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise ValueError("auto_offset_reset is earliest or latest")
