"""One Kafka-protocol connection for a member: pipelined requests, answered in order.

Requests are encoded and responses decoded by kio (the codec the server uses). Several requests
may be outstanding (a parked JoinGroup, a commit, a heartbeat); a reader task matches each
response to its request by correlation id. When the connection breaks, or a request outlives
its timeout (Kafka's clients then close the connection too), every outstanding request fails
with `ConnectionLost` and the connection is unusable.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from coordinator.wire.codec import FRAME_LENGTH, build_request, decode_response, encode_request


class ConnectionLost(ConnectionError):
    """The connection broke (or timed out) before the response arrived."""


class Connection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._next_id = 0
        self._pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._closed = False
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, timeout_s: float) -> Connection:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        except (OSError, TimeoutError) as exc:
            raise ConnectionLost(f"cannot connect to {host}:{port}: {exc}") from None
        return cls(reader, writer, client_id)

    @property
    def closed(self) -> bool:
        return self._closed

    async def request(
        self, api_key: int, version: int, values: Mapping[str, Any], timeout_s: float
    ) -> Any:
        """Send one request and wait for its response (ConnectionLost on break or timeout)."""
        if self._closed:
            raise ConnectionLost("connection closed")
        self._next_id += 1
        correlation_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = (api_key, version, future)
        data = encode_request(
            build_request(api_key, version, values), correlation_id, self._client_id
        )
        try:
            self._writer.write(data)
            await self._writer.drain()
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            self.close()
            raise ConnectionLost(f"api {api_key}: no response within {timeout_s:.1f} s") from None
        except (OSError, ConnectionError) as exc:
            self.close()
            raise ConnectionLost(str(exc)) from None
        finally:
            self._pending.pop(correlation_id, None)

    async def _read_loop(self) -> None:
        try:
            while True:
                (length,) = FRAME_LENGTH.unpack(await self._reader.readexactly(FRAME_LENGTH.size))
                frame = await self._reader.readexactly(length)
                (correlation_id,) = FRAME_LENGTH.unpack_from(frame, 0)
                entry = self._pending.get(correlation_id)
                if entry is None:
                    continue  # its request timed out; the answer is not wanted any more
                api_key, version, future = entry
                _, response = decode_response(frame, api_key, version)
                if not future.done():
                    future.set_result(response)
        except (OSError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._closed = True
            self._writer.close()
            self._fail_pending()

    def _fail_pending(self) -> None:
        self._closed = True
        for _, _, future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost("connection lost"))
                future.exception()  # retrieved here: its requester may have gone (timed out)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()
            self._read_task.cancel()
        self._fail_pending()

    async def wait_closed(self) -> None:
        self.close()
        with contextlib.suppress(asyncio.CancelledError, OSError, ConnectionError):
            await self._read_task
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()
