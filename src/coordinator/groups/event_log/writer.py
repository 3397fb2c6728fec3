"""The event log's writer: a small program of its own that turns events into JSON Lines files.

    python -I .../coordinator/groups/event_log/writer.py DIRECTORY NODE_ID MAX_BYTES

`coordinator.groups.event_log.log.EventLog` starts it as one child process of the server, by this
file's path in isolated mode (`-I`): it never imports the server's `__main__` (a script without a
main guard, a script read from stdin), the user's working directory or anything but the standard
library, so it starts in milliseconds and stays near 10 MB of memory. That is also why the
line format and the ConsumerProtocol Assignment reader below are written here rather than
imported: `rebalance.events.Event.to_json_dict` is the reference, and the tests hold both to
the same output.

Protocol. In on stdin: frames of a 4-byte big-endian length and a `marshal`led list of
`(offset_ms, [(type, ts, group, generation, member, fields), ...])` batches, where `ts + offset_ms`
is the event's time in ms since the epoch. Out on stdout, one line each: `written N` (events
written so far, after each burst is flushed), `error MESSAGE` (a write failure, once: later
events are read and dropped, so the server never piles them up) and `resumed N` (writing works
again, N events were dropped meanwhile). While writes fail the writer tries again at most once
every `RETRY_SECONDS`, with the frame that has just arrived: a disk that was full, or a log
directory that was removed, takes events again without a restart. The file a failure left with
a torn last line is cut back to its last whole line, and writing goes on in a new file, so
every line in the log is a whole event. The writer stops at the end of
its input: when the server closes the log or dies (then it writes every complete frame it has).
It ignores SIGTERM, SIGINT and SIGHUP, which can reach it with the rest of a service (systemd
signals every process of it): the server stops on them and then closes its input, so nothing is
cut short. If a process that forked from the server keeps the pipe open after the server died,
the writer sees its parent change and stops too.
"""

from __future__ import annotations

import json
import marshal
import os
import select
import signal
import struct
import sys
import time

# Not `typing` or `pathlib` (1.5 MB of the writer's memory together): names for mypy only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

FRAME_HEADER = struct.Struct(">I")
PARENT_CHECK_SECONDS = 1.0
RETRY_SECONDS = 1.0
READ_BYTES = 1 << 20
SCHEMA_VERSION = 2
CONSUMER_PROTOCOL_TYPE = "consumer"

EventTuple = tuple[str, int, "str | None", "int | None", "str | None", "dict[str, Any]"]


class LogFiles:
    """The log directory's files: appends lines, starting a new file when one would be too big."""

    def __init__(self, directory: str, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        try:
            existing = os.listdir(directory)
        except OSError:  # gone or not a directory: reported by the first write, like any failure
            existing = []
        self.sequence = max((self._sequence_of(name) for name in existing), default=0)
        self.handle: IO[bytes] | None = None
        self.size = 0

    @staticmethod
    def _sequence_of(name: str) -> int:
        """N of a file named ``events-N.jsonl``; 0 for any other name."""
        if not (name.startswith("events-") and name.endswith(".jsonl")):
            return 0
        try:
            return int(name[len("events-") : -len(".jsonl")])
        except ValueError:
            return 0

    def append(self, data: bytes) -> None:
        if self.handle is None or (self.size + len(data) > self.max_bytes and self.size > 0):
            self.close()
            self.sequence += 1
            path = os.path.join(self.directory, f"events-{self.sequence:06d}.jsonl")
            self.handle = open(path, "ab")  # noqa: SIM115 (closed by close())
            self.size = os.fstat(self.handle.fileno()).st_size
        self.handle.write(data)
        self.size += len(data)

    def flush(self) -> None:
        if self.handle is not None:
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def abandon(self) -> None:
        """After a failed write: drop what is buffered, cut a torn last line off the current
        file (what a write that ran out of space leaves), and start a new file next."""
        handle, self.handle = self.handle, None
        if handle is None:
            return
        try:  # noqa: SIM105 (contextlib is a module more in a process kept small)
            handle.close()  # its flush fails again, but the file is closed all the same
        except OSError:
            pass
        path = os.path.join(self.directory, f"events-{self.sequence:06d}.jsonl")
        try:
            with open(path, "r+b") as torn:
                torn.truncate(_whole_lines_size(torn))
        except OSError:
            pass  # gone with its directory, or still unwritable: nothing torn to keep


def _whole_lines_size(handle: IO[bytes]) -> int:
    """The size of the file up to and including its last newline."""
    end = handle.seek(0, os.SEEK_END)
    at = end
    while at > 0:
        start = max(0, at - 65536)
        handle.seek(start)
        newline = handle.read(at - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        at = start
    return 0


def event_line(event: EventTuple, offset_ms: int, node_id: int) -> bytes:
    """One log line, as `rebalance.events.Event.to_json_dict` shapes it (`SCHEMA_VERSION`)."""
    kind, ts, group, generation, member, fields = event
    if kind == "sync_completed":
        fields = dict(fields)
        raw: dict[str, bytes] = fields.pop("assignments")
        consumer = fields.pop("protocol_type", None) == CONSUMER_PROTOCOL_TYPE
        fields["assignments"] = {
            who: assigned_partitions(data) if consumer else None for who, data in raw.items()
        }
        fields["sizes"] = {who: len(data) for who, data in raw.items()}
    elif kind == "join_completed" and "subscriptions" in fields:
        fields = dict(fields)
        subscriptions: dict[str, bytes] = fields.pop("subscriptions")
        if fields.pop("protocol_type", None) == CONSUMER_PROTOCOL_TYPE:
            fields["owned"] = {who: owned_partitions(data) for who, data in subscriptions.items()}
    record = {
        "v": SCHEMA_VERSION,
        "ts": ts + offset_ms,
        "node": node_id,
        "type": kind,
        "group": group,
        "generation": generation,
        "member": member,
        **fields,
    }
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


class _Malformed(ValueError):
    pass


class _Truncated(_Malformed):
    pass


class _Reader:
    """Big-endian reads over bytes; running past the end raises `_Truncated`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise _Truncated
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        value: int = struct.unpack(">h", self.take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value


def assigned_partitions(data: bytes) -> list[list[object]] | None:
    """`[[topic, [partitions...]], ...]` from a ConsumerProtocol Assignment of any version (all
    share v0's layout; later versions may append fields), `[]` for empty bytes (a member the
    leader left out), None for bytes that are not an Assignment."""
    if not data:
        return []
    reader = _Reader(data)
    try:
        if reader.int16() < 0:
            return None
        by_topic: dict[str, list[int]] = {}
        topics = reader.int32()
        if topics < 0:
            return None
        for _ in range(topics):
            length = reader.int16()
            if length < 0:
                return None
            topic = reader.take(length).decode("utf-8")
            count = reader.int32()
            if count < 0:
                return None
            partitions = struct.unpack(f">{count}i", reader.take(4 * count))
            by_topic.setdefault(topic, []).extend(partitions)
        user_data = reader.int32()
        if user_data < -1:
            return None
        reader.take(max(user_data, 0))
    except (_Truncated, UnicodeDecodeError):
        return None
    return [[topic, partitions] for topic, partitions in by_topic.items()]


def owned_partitions(data: bytes) -> list[list[object]] | None:
    """`[[topic, [partitions...]], ...]`: the owned partitions of a ConsumerProtocol Subscription
    of version 1 or later (above 3: its v3 prefix), None for version 0 (it has none) or bytes
    that are not a Subscription."""
    reader = _Reader(data)
    try:
        version = reader.int16()
        if version < 0:
            return None
        for _ in range(_count_of(reader)):  # topics
            _string(reader)
        user_data = reader.int32()
        if user_data < -1:
            return None
        reader.take(max(user_data, 0))
        if version < 1:
            return None
        by_topic: dict[str, list[int]] = {}
        for _ in range(_count_of(reader)):
            topic = _string(reader)
            count = _count_of(reader)
            numbers = struct.unpack(f">{count}i", reader.take(4 * count))
            by_topic.setdefault(topic, []).extend(numbers)
        if version >= 2:
            reader.int32()  # generation
        if version >= 3:
            length = reader.int16()  # rack, nullable
            if length < -1:
                return None
            reader.take(max(length, 0)).decode("utf-8")
    except (_Malformed, UnicodeDecodeError):
        return None
    return [[topic, partitions] for topic, partitions in by_topic.items()]


def _count_of(reader: _Reader) -> int:
    count = reader.int32()
    if count < 0:
        raise _Malformed
    return count


def _string(reader: _Reader) -> str:
    length = reader.int16()
    if length < 0:
        raise _Malformed
    return reader.take(length).decode("utf-8")


def _frames(buffer: bytearray) -> tuple[list[bytes], int]:
    """The complete frames at the start of `buffer` and how many bytes they take."""
    frames: list[bytes] = []
    at = 0
    while len(buffer) - at >= FRAME_HEADER.size:
        (length,) = FRAME_HEADER.unpack_from(buffer, at)
        end = at + FRAME_HEADER.size + length
        if end > len(buffer):
            break
        frames.append(bytes(buffer[at + FRAME_HEADER.size : end]))
        at = end
    return frames, at


class _Acks:
    """Reports to the server on stdout; a server that is gone is not an error here."""

    def __init__(self) -> None:
        self.open = True

    def send(self, line: str) -> None:
        if not self.open:
            return
        data = (line.replace("\n", " ") + "\n").encode()
        try:
            while data:
                data = data[os.write(1, data) :]
        except OSError:
            self.open = False


def run(directory: str, node_id: int, max_bytes: int) -> None:
    """Append every event that arrives on stdin until it ends (or the parent changes)."""
    parent = os.getppid()
    files = LogFiles(directory, max_bytes)
    acks = _Acks()
    buffer = bytearray()
    written = 0
    failed_at: float | None = None  # when writing last failed, while it keeps failing
    dropped = 0  # events not written since then
    try:
        while True:
            ready, _, _ = select.select([0], [], [], PARENT_CHECK_SECONDS)
            if not ready:
                if os.getppid() != parent:  # orphaned: the server died, another holds the pipe
                    return
                continue
            chunk = os.read(0, READ_BYTES)
            if not chunk:
                return
            buffer += chunk
            frames, used = _frames(buffer)
            del buffer[:used]
            if not frames:
                continue
            if failed_at is not None and time.monotonic() - failed_at < RETRY_SECONDS:
                dropped += _count(frames)
                continue
            lines = [
                event_line(event, offset, node_id)
                for frame in frames
                for offset, events in marshal.loads(frame)
                for event in events
            ]
            try:
                for line in lines:
                    files.append(line)
                files.flush()
            except OSError as error:
                files.abandon()
                dropped += len(lines)
                if failed_at is None:
                    acks.send(
                        "error event log writer failed; events are not written until it "
                        f"can write again: {error!r}"
                    )
                failed_at = time.monotonic()
                continue
            written += len(lines)
            if failed_at is not None:
                acks.send(f"resumed {dropped}")
                failed_at, dropped = None, 0
            acks.send(f"written {written}")
    finally:
        try:
            files.close()
        except OSError:
            if failed_at is None:
                raise
            # Already reported (the lost events are counted by the server); the disk is still
            # full, so the buffered tail cannot be flushed either: no traceback for it.


def _count(frames: list[bytes]) -> int:
    return sum(len(events) for frame in frames for _, events in marshal.loads(frame))


def main(argv: list[str]) -> int:
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    directory, node_id, max_bytes = argv[0], int(argv[1]), int(argv[2])
    run(directory, node_id, max_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
