"""`rebalance groups`: list the groups of a running server and describe one.

`rebalance groups list --bootstrap HOST:PORT` prints every group with its type and state
(ListGroups v5). `rebalance groups describe GROUP --bootstrap HOST:PORT` asks the group's
coordinator (FindCoordinator) and prints its members: for a classic group their client ids,
hosts and assigned partitions (DescribeGroups); for a client-balance group each node's
sourceCount, nodeId and held partitions (ClientBalanceDescribe), which is what TubeMQ's
`admin_query_consume_group_detail` answers; for a KIP-848 consumer group (which DescribeGroups
shows as Dead, as Kafka does) each member's epoch, state and partitions (ConsumerGroupDescribe).
Any broker speaking Kafka's protocol can be asked for classic and consumer groups; the
client-balance view needs this server's extension API.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from assignors.consumer_protocol import ConsumerProtocolError, decode_assignment
from coordinator.errors import OperationalError
from coordinator.wire import client_balance_schema as schema
from coordinator.wire.client import WireClient

LIST_GROUPS, DESCRIBE_GROUPS, FIND_COORDINATOR = (16, 5), (15, 5), (10, 3)
CONSUMER_GROUP_DESCRIBE = (69, 0)
CLIENT_BALANCE = "client-balance"


def run_groups(args: Any, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.groups_command == "list":
        return asyncio.run(_list(args.bootstrap, out))
    return asyncio.run(_describe(args.bootstrap, args.group, out))


async def _connect(bootstrap: str) -> WireClient:
    host, _, port = bootstrap.rpartition(":")
    if not host or not port.isdigit():
        raise OperationalError(f"--bootstrap must be HOST:PORT, not {bootstrap!r}")
    try:
        return await WireClient.connect(host, int(port))
    except OSError as exc:
        raise OperationalError(f"cannot connect to {bootstrap}: {exc.strerror or exc}") from None


async def _list(bootstrap: str, out: TextIO) -> int:
    client = await _connect(bootstrap)
    try:
        response = await client.request(*LIST_GROUPS, {"states_filter": []})
    finally:
        await client.close()
    if int(response.error_code) != 0:
        raise OperationalError(f"ListGroups: {response.error_code.name}")
    rows = [(g.group_id, g.group_type or "classic", g.group_state) for g in response.groups]
    _table(out, ("group", "type", "state"), sorted(rows))
    return 0


async def _describe(bootstrap: str, group: str, out: TextIO) -> int:
    schema.register_with_codec()
    bootstrap_client = await _connect(bootstrap)
    try:
        found = await bootstrap_client.request(*FIND_COORDINATOR, {"key": group, "key_type": 0})
    finally:
        await bootstrap_client.close()
    if int(found.error_code) != 0:
        raise OperationalError(f"FindCoordinator for {group!r}: {found.error_code.name}")
    client = await _connect(f"{found.host}:{found.port}")
    try:
        described = (await client.request(*DESCRIBE_GROUPS, {"groups": [group]})).groups[0]
        if int(described.error_code) != 0:
            raise OperationalError(f"DescribeGroups {group!r}: {described.error_code.name}")
        if described.protocol_type == CLIENT_BALANCE:
            answer = await client.request(schema.DESCRIBE_KEY, 0, {"group_ids": [group]})
            _print_client_balance(answer.groups[0], out)
        elif described.group_state == "Dead":
            answer = await client.request(
                *CONSUMER_GROUP_DESCRIBE,
                {"group_ids": [group], "include_authorized_operations": False},
            )
            consumer_group = answer.groups[0]
            if int(consumer_group.error_code) == 0:
                _print_consumer(consumer_group, out)
            else:
                out.write(f"group {group}: no such group here (Dead)\n")
        else:
            _print_classic(described, out)
    finally:
        await client.close()
    return 0


def _print_client_balance(group: Any, out: TextIO) -> None:
    if int(group.error_code) != 0:
        raise OperationalError(f"ClientBalanceDescribe {group.group_id!r}: {group.error_code}")
    source = int(group.source_count)
    out.write(
        f"group {group.group_id}: client-balance, {group.state}, sourceCount "
        f"{source if source > 0 else 'off'}, topics {', '.join(group.topics) or '-'}, "
        f"group epoch {group.group_epoch}\n"
    )
    rows = [
        (
            str(n.node_id),
            str(n.source_count),
            n.member_id,
            n.client_id,
            n.client_host,
            str(sum(len(h.partitions) for h in n.held)),
            _partitions((h.topic, h.partitions) for h in n.held),
        )
        for n in group.nodes
    ]
    _table(out, ("nodeId", "sourceCount", "member", "client", "host", "count", "partitions"), rows)


def _print_consumer(group: Any, out: TextIO) -> None:
    out.write(
        f"group {group.group_id}: consumer, {group.group_state}, group epoch "
        f"{group.group_epoch}, target epoch {group.assignment_epoch}, assignor "
        f"{group.assignor_name}\n"
    )
    rows = [
        (
            m.member_id,
            m.client_id,
            m.client_host,
            str(m.member_epoch),
            _partitions((t.topic_name, t.partitions) for t in m.assignment.topic_partitions),
        )
        for m in group.members
    ]
    _table(out, ("member", "client", "host", "epoch", "partitions"), rows)


def _print_classic(group: Any, out: TextIO) -> None:
    out.write(
        f"group {group.group_id}: classic, {group.group_state}, protocol "
        f"{group.protocol_type or '-'}/{group.protocol_data or '-'}\n"
    )
    rows = []
    for m in group.members:
        partitions = "-"
        if group.protocol_type == "consumer" and m.member_assignment:
            try:
                assigned = decode_assignment(m.member_assignment).partitions
                by_topic: dict[str, list[int]] = {}
                for topic, p in assigned:
                    by_topic.setdefault(topic, []).append(p)
                partitions = _partitions(by_topic.items())
            except ConsumerProtocolError:
                partitions = "(unreadable)"
        rows.append((m.member_id, m.client_id, m.client_host, partitions))
    _table(out, ("member", "client", "host", "partitions"), rows)


def _partitions(held: Iterable[tuple[str, Iterable[int]]]) -> str:
    return " ".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in held) or "-"


def _table(out: TextIO, header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        out.write("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
