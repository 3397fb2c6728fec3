"""What a client-balance call answers when it fails: one exception with a code.

Codes come from three places: Kafka's (`rebalance.errors.ErrorCode`, e.g. NOT_COORDINATOR), the
coordinator's TubeMQ codes (PARTITION_OCCUPIED 410, CLIENT_DUPLICATE_INDEXID 430, ...; also in
`ErrorCode`), and TubeMQ's client-side ones below, which no server sends.
"""

from __future__ import annotations

from enum import IntEnum

from rebalance.errors import ErrorCode


class ClientCode(IntEnum):
    """TubeMQ's client-side codes (`TErrCodeConstants`)."""

    NO_PARTITION_ASSIGNED = 406
    ALL_PARTITION_WAITING = 407
    ALL_PARTITION_INUSE = 408
    CLIENT_SHUTDOWN = 420
    CLIENT_HIGH_FREQUENCY_REQUEST = 421


class ClientBalanceError(Exception):
    """A call that failed: `code` says why (an `ErrorCode`, a `ClientCode` or a raw int)."""

    def __init__(self, code: int, message: str = "") -> None:
        self.code = _named(code)
        name = getattr(self.code, "name", str(code))
        super().__init__(f"{name} ({int(code)}): {message}" if message else f"{name} ({code})")
        self.message = message


def _named(code: int) -> int:
    for enum in (ErrorCode, ClientCode):
        try:
            return enum(code)
        except ValueError:
            continue
    return code
