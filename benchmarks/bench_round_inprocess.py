"""A classic-group rebalance through the wire server's own code, in one process, no sockets.

`bench_groups.py` measures a 1000-member rebalance from outside, where the kernel's loopback
work and the load generator share the two cores with the server. This one feeds the same
request frames to the server's connections (`coordinator.node.server`) through a transport that
only keeps what it is given, so the figure is the server's own Python work per round: frame
parsing, kio decoding, the core, parking and waking the requests, encoding and queuing the
replies (the store's append and fsync run as in the server, on its writer thread). The CPU
figure is the whole process's (`time.process_time`) over the round, parked joins included; the
wall figure runs from the last JoinGroup to the last SyncGroup reply. It is what
each step of the wire path's redesign is measured with before the loopback run.

Run: .venv/bin/python benchmarks/bench_round_inprocess.py [--members 1000] [--rounds 7]
[--profile FILE] (cProfile of the rounds, stats written to FILE).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from kio.schema.join_group.v3.response import JoinGroupResponse

from bench_groups import GROUP_CONFIG, join_values
from bench_wire import machine
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.node.collector import tune_for_serving
from coordinator.node.server import WireServer
from coordinator.testing.server import running_server
from coordinator.wire.codec import build_request, decode_response, encode_request
from coordinator.wire.transport.acceptor import Ticket

LENGTH = struct.Struct(">i")


def join_response(frame: bytes) -> JoinGroupResponse:
    """The JoinGroup v3 response in `frame`."""
    response = decode_response(frame, 11, 3)[1]
    assert isinstance(response, JoinGroupResponse)
    return response


class Tally:
    """Which transports were written to since `expect`; wakes `settled` once all were."""

    def __init__(self) -> None:
        self.wrote: set[int] = set()
        self.want = 0
        self.settled: asyncio.Future[None] | None = None

    def expect(self, count: int) -> asyncio.Future[None]:
        self.wrote.clear()
        self.want = count
        self.settled = asyncio.get_running_loop().create_future()
        return self.settled

    def written(self, number: int) -> None:
        self.wrote.add(number)
        if len(self.wrote) == self.want and self.settled is not None:
            self.settled.set_result(None)
            self.settled = None


class KeepingTransport(asyncio.Transport):
    """A transport that keeps every write and never pushes back."""

    def __init__(self, number: int, tally: Tally) -> None:
        super().__init__()
        self.number = number
        self.tally = tally
        self.written: list[bytes] = []
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000 + self.number) if name == "peername" else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))
        self.tally.written(self.number)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def frames(self) -> list[bytes]:
        """The response frames written so far (without their length), then forgotten."""
        data = b"".join(self.written)
        self.written.clear()
        out, position = [], 0
        while position < len(data):
            (length,) = LENGTH.unpack_from(data, position)
            out.append(data[position + 4 : position + 4 + length])
            position += 4 + length
        return out


def sync_frame(group: str, generation: int, member: str, leader: str, ids: list[str]) -> bytes:
    values = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": None,
        "assignments": [{"member_id": x, "assignment": b"b" * 24} for x in ids]
        if member == leader
        else [],
    }
    return encode_request(build_request(14, 3, values), 2, "b")


async def settle(
    transports: list[KeepingTransport], written: asyncio.Future[None]
) -> list[list[bytes]]:
    """Run the loop until every transport was written to (each connection has one request
    outstanding: its response), then take the frames."""
    await written
    return [transport.frames() for transport in transports]


async def run(members: int, rounds: int, profile_to: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        groups = GroupCoordinatorExtension(GROUP_CONFIG, seed=1)
        async with running_server(data_dir=Path(scratch), groups=groups) as node:
            tune_for_serving()
            server = node.app.server
            assert isinstance(server, WireServer)
            listener = server.listeners[0]
            tally = Tally()
            transports = [KeepingTransport(i, tally) for i in range(members)]
            conns = []
            for transport in transports:
                conn = server._new_connection(listener, Ticket("127.0.0.1", lambda _t: None))
                conn.connection_made(transport)
                conns.append(conn)
            group = "round"
            joins = [encode_request(build_request(11, 3, join_values(group, "")), 1, "b")]
            written = tally.expect(members)
            for conn in conns:
                conn.data_received(joins[0])
            replies = await settle(transports, written)
            first = [join_response(r[0]) for r in replies]
            ids = [r.member_id for r in first]
            generation: int = first[0].generation_id
            leader = first[0].leader
            written = tally.expect(members)
            for conn, member in zip(conns, ids, strict=True):
                conn.data_received(sync_frame(group, generation, member, leader, ids))
            await settle(transports, written)
            wall, cpu = [], []
            profiler = cProfile.Profile() if profile_to else None
            for _ in range(rounds):
                joins = [
                    encode_request(build_request(11, 3, join_values(group, m)), 1, "b") for m in ids
                ]
                syncs = [sync_frame(group, generation + 1, m, leader, ids) for m in ids]
                gc.collect()
                if profiler is not None:
                    profiler.enable()
                cpu_started = time.process_time()
                written = tally.expect(members)
                for conn, frame in zip(conns[:-1], joins[:-1], strict=True):
                    conn.data_received(frame)
                await asyncio.sleep(0.05)  # the parked joins are in
                started = time.perf_counter()
                conns[-1].data_received(joins[-1])
                await settle(transports, written)
                written = tally.expect(members)
                for conn, frame in zip(conns, syncs, strict=True):
                    conn.data_received(frame)
                await settle(transports, written)
                cpu.append((time.process_time() - cpu_started) * 1000)
                wall.append((time.perf_counter() - started) * 1000)
                if profiler is not None:
                    profiler.disable()
                generation += 1
            if profiler is not None and profile_to:
                profiler.dump_stats(profile_to)
            print(
                f"{members} members, in process: median of {rounds}: last JoinGroup in -> last "
                f"SyncGroup reply written {statistics.median(wall):.1f} ms wall; CPU of the "
                f"process for the round's {2 * members} requests {statistics.median(cpu):.1f} ms "
                f"(min {min(cpu):.1f}, max {max(cpu):.1f})"
            )
            for conn in conns:
                conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", default=None, help="write cProfile stats of the rounds")
    args = parser.parse_args()
    print(f"# rebalance in process — {machine()}")
    asyncio.run(run(args.members, args.rounds, args.profile))


if __name__ == "__main__":
    main()
