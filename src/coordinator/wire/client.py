"""A minimal Kafka-protocol client over one connection: requests built and read by kio.

`WireClient.request(api_key, version, {...})` builds the kio request from a dict, sends it and
returns the decoded kio response; `send`/`read_frame` give raw access for pipelining and for
feeding a server malformed bytes (tests). The ZooKeeper-coordinated consumer fetches with it.
`read_records` turns Fetch's record bytes into records.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping, Sequence
from typing import Any

from kio.records.readers import read_batch
from kio.records.schema import Record
from kio.schema.errors import ErrorCode

from coordinator.wire.api_keys import ApiKey
from coordinator.wire.codec import FRAME_LENGTH, build_request, decode_response, encode_request


class WireClient:
    """A minimal Kafka-protocol client over one connection, for tests and benchmarks.

    `request(api_key, version, {...})` builds the kio request from a dict, sends it and returns
    the decoded kio response; `send`/`read_frame` give raw access for pipelining and for
    feeding the server malformed bytes.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_id: str = "rebalance-test",
    ) -> None:
        self.reader = reader
        self.writer = writer
        #: The request header's client id (what the server shows as the member's client).
        self.client_id = client_id
        self._correlation_id = 0
        #: Requests sent whose caller stopped waiting (cancelled mid-flight): their answers
        #: still arrive, in order, and are skipped by the next `request`.
        self._abandoned: set[int] = set()
        #: A frame's length already read while its body was not (a read cancelled between).
        self._body_length: int | None = None

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        client_id: str = "rebalance-test",
        *,
        tls: ssl.SSLContext | None = None,
    ) -> WireClient:
        """Connect (over TLS with `tls`: an SSL or SASL_SSL listener)."""
        reader, writer = await asyncio.open_connection(host, port, ssl=tls)
        return cls(reader, writer, client_id)

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def encode(self, api_key: int, api_version: int, values: Mapping[str, Any]) -> bytes:
        request = build_request(api_key, api_version, values)
        return encode_request(request, self.next_correlation_id(), self.client_id)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self) -> bytes:
        """The next response frame without its length prefix (IncompleteReadError at EOF)."""
        if self._body_length is None:
            (self._body_length,) = FRAME_LENGTH.unpack(
                await self.reader.readexactly(FRAME_LENGTH.size)
            )
        body = await self.reader.readexactly(self._body_length)
        self._body_length = None
        return body

    async def read_response(self, api_key: int, api_version: int) -> tuple[int, Any]:
        return decode_response(await self.read_frame(), api_key, api_version)

    async def request(self, api_key: int, api_version: int, values: Mapping[str, Any]) -> Any:
        data = self.encode(api_key, api_version, values)
        expected = self._correlation_id
        try:
            await self.send(data)
            while True:
                frame = await self.read_frame()
                correlation_id = int.from_bytes(frame[:4], "big", signed=True)
                if correlation_id not in self._abandoned:
                    break
                self._abandoned.discard(correlation_id)
        except asyncio.CancelledError:
            # The answer is still coming; the next request must not take it for its own.
            self._abandoned.add(expected)
            raise
        if correlation_id != expected:
            raise AssertionError(f"correlation id {correlation_id}, expected {expected}")
        return decode_response(frame, api_key, api_version)[1]

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


def read_records(data: bytes) -> list[Record]:
    """Every record of the batches in `data` (as Fetch returns them), CRCs checked by kio."""
    records: list[Record] = []
    position = 0
    while position < len(data):
        batch, size = read_batch(data, position)
        records.extend(batch.records)
        position += size
    return records


async def list_offsets(
    client: WireClient, partitions: Sequence[tuple[str, int]], timestamp: int
) -> dict[tuple[str, int], int]:
    """ListOffsets v1: the earliest (-2) or latest (-1, the log end) offset of each partition."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "timestamp": timestamp}
        )
    response = await client.request(ApiKey.LIST_OFFSETS, 1, {
        "replica_id": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    })  # fmt: skip
    offsets = {}
    for topic in response.topics:
        for p in topic.partitions:
            if p.error_code != ErrorCode.none:
                raise OSError(f"list offsets {topic.name}-{p.partition_index}: {p.error_code}")
            offsets[(topic.name, p.partition_index)] = int(p.offset)
    return offsets
