"""ACLs: the authorizer's decision as Kafka makes it, the ACL APIs, durability across a
restart, and what the group, topic and cluster APIs answer a principal without permission
(requests from this project's `WireClient` over SASL/PLAIN; the client libraries are in
test_acl_interop.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.node.authorization.operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS
from coordinator.node.config import ConfigError, parse_settings
from coordinator.testing.server import RunningServer, WireClient, running_server
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.security.acls import (
    Acl,
    AclFilter,
    Authorizer,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from coordinator.wire.security.credentials import CredentialStore

GROUP, TOPIC, CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
READ, DESCRIBE, WRITE, ALL = Operation.READ, Operation.DESCRIBE, Operation.WRITE, Operation.ALL
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = (
    0,
    1,
    2,
    3,
    8,
    9,
    10,
)
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, SECURITY_DISABLED, INVALID_REQUEST = 29, 30, 31, 54, 42
GROUP_ID_NOT_FOUND = 69


def acl(
    kind: ResourceType,
    name: str,
    principal: str,
    operation: Operation,
    permission: Permission = ALLOW,
    pattern: PatternType = LITERAL,
    host: str = "*",
) -> Acl:
    return Acl(kind, name, pattern, principal, host, operation, permission)


def decide(
    acls: list[Acl],
    principal: str,
    operation: Operation,
    kind: ResourceType,
    name: str,
    host: str = "10.0.0.1",
    **options: Any,
) -> bool:
    return Authorizer(lambda: acls, **options).authorize(principal, host, operation, kind, name)


def test_no_acl_for_a_resource_denies_unless_everyone_is_allowed() -> None:
    other = [acl(GROUP, "other", "User:alice", READ)]
    assert not decide(other, "User:alice", READ, GROUP, "g")
    assert decide(other, "User:alice", READ, GROUP, "g", allow_if_no_acl=True)
    # An ACL for someone else still names the resource: no fallback to everyone.
    mine = [acl(GROUP, "g", "User:bob", READ)]
    assert not decide(mine, "User:alice", READ, GROUP, "g", allow_if_no_acl=True)


def test_super_users_may_do_anything() -> None:
    denied = [acl(GROUP, "g", "User:admin", ALL, DENY)]
    assert decide(denied, "User:admin", READ, GROUP, "g", super_users=["User:admin"])


def test_literal_prefixed_and_wildcard_patterns() -> None:
    acls = [
        acl(GROUP, "team-", "User:alice", READ, pattern=PREFIXED),
        acl(TOPIC, "*", "User:*", READ),
    ]
    assert decide(acls, "User:alice", READ, GROUP, "team-billing")
    assert not decide(acls, "User:alice", READ, GROUP, "tea")
    assert decide(acls, "User:carol", READ, TOPIC, "anything")
    assert not decide(acls, "User:carol", WRITE, TOPIC, "anything")


def test_deny_wins_and_hosts_must_match() -> None:
    acls = [
        acl(TOPIC, "t", "User:*", ALL),
        acl(TOPIC, "t", "User:mallory", WRITE, DENY),
        acl(TOPIC, "t", "User:bob", ALL, DENY, host="10.0.0.9"),
    ]
    assert decide(acls, "User:mallory", READ, TOPIC, "t")
    assert not decide(acls, "User:mallory", WRITE, TOPIC, "t")
    assert decide(acls, "User:bob", WRITE, TOPIC, "t", host="10.0.0.1")
    assert not decide(acls, "User:bob", READ, TOPIC, "t", host="10.0.0.9")


def test_read_write_delete_alter_imply_describe() -> None:
    for operation in (READ, WRITE, Operation.DELETE, Operation.ALTER):
        assert decide([acl(TOPIC, "t", "User:a", operation)], "User:a", DESCRIBE, TOPIC, "t")
    assert not decide([acl(TOPIC, "t", "User:a", Operation.CREATE)], "User:a", DESCRIBE, TOPIC, "t")
    configs = [acl(TOPIC, "t", "User:a", Operation.ALTER_CONFIGS)]
    assert decide(configs, "User:a", Operation.DESCRIBE_CONFIGS, TOPIC, "t")


def test_filters_select_acls_as_kafka_does() -> None:
    prefixed = acl(GROUP, "team-", "User:alice", READ, pattern=PREFIXED)
    literal = acl(GROUP, "team-a", "User:bob", READ)
    wildcard = acl(GROUP, "*", "User:carol", READ)
    everything = [prefixed, literal, wildcard]
    assert [a for a in everything if AclFilter().matches(a)] == everything
    match = AclFilter(GROUP, "team-a", PatternType.MATCH)
    assert [a for a in everything if match.matches(a)] == everything
    exact = AclFilter(GROUP, "team-a", LITERAL)
    assert [a for a in everything if exact.matches(a)] == [literal]
    by_principal = AclFilter(principal="User:alice")
    assert [a for a in everything if by_principal.matches(a)] == [prefixed]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (acl(ResourceType.ANY, "t", "User:a", READ), "is not a resource"),
        (Acl(TOPIC, "t", PatternType.MATCH, "User:a", "*", READ, ALLOW), "cannot be stored"),
        (acl(TOPIC, "t", "User:a", Operation.ANY), "is not an operation"),
        (acl(TOPIC, "t", "alice", READ), "is not TYPE:NAME"),
        (acl(CLUSTER, "c", "User:a", READ), "is named kafka-cluster"),
    ],
)
def test_acls_that_cannot_be_created(bad: Acl, why: str) -> None:
    with pytest.raises(InvalidAcl, match=why):
        bad.check()


def test_bad_authorizer_settings_are_one_line_errors() -> None:
    with pytest.raises(
        ConfigError, match=r"authorizer\.class\.name: my\.Authorizer is not offered"
    ):
        parse_settings(["authorizer.class.name=my.Authorizer"])
    with pytest.raises(ConfigError, match=r"super\.users: 'admin' is not a principal"):
        parse_settings(["super.users=User:root;admin"])


# -- on the wire ----------------------------------------------------------------------------
def acl_settings(*extra: str) -> list[str]:
    return [
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        f"authorizer.class.name={STANDARD}",
        "super.users=User:admin",
        "group.initial.rebalance.delay.ms=0",
        *extra,
    ]


def add_users(data_dir: Path) -> None:
    data_dir.mkdir(exist_ok=True)
    store = CredentialStore(data_dir)
    for user in ("admin", "alice", "bob"):
        store.add(user, f"{user}-secret", ["SCRAM-SHA-256"])
    store.close()


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[RunningServer]:
    add_users(tmp_path / "data")
    async with running_server(
        settings=acl_settings(), data_dir=tmp_path / "data", topics=[("visible", 1), ("hidden", 1)]
    ) as server:
        yield server


async def client_of(server: RunningServer, user: str) -> WireClient:
    client = await WireClient.connect(server.host, server.port)
    await client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    token = f"\0{user}\0{user}-secret".encode()
    assert (
        await client.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
    ).error_code == 0
    return client


def creation(a: Acl) -> dict[str, Any]:
    return {
        "resource_type": int(a.resource_type),
        "resource_name": a.resource_name,
        "resource_pattern_type": int(a.pattern_type),
        "principal": a.principal,
        "host": a.host,
        "operation": int(a.operation),
        "permission_type": int(a.permission),
    }


ANY_FILTER = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}

GRANTS = [
    acl(GROUP, "team-", "User:alice", READ, pattern=PREFIXED),
    acl(TOPIC, "visible", "User:*", ALL),
]


async def grant(server: RunningServer) -> None:
    admin = await client_of(server, "admin")
    answer = await admin.request(
        ApiKey.CREATE_ACLS, 3, {"creations": [creation(a) for a in GRANTS]}
    )
    assert [r.error_code for r in answer.results] == [0, 0]
    await admin.close()


def join(group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 10_000,
        "rebalance_timeout": 10_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\0\0\0\0\0\1\0\7visible\0\0\0\0"}],
    }


def offset_commit(group: str, *topics: str, offset: int = 1) -> dict[str, Any]:
    """An OffsetCommit v8 body outside any generation: partition 0 of each topic at `offset`."""
    partition = {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [partition]} for topic in topics],
    }


async def test_acls_are_created_described_deleted_and_survive_a_restart(tmp_path: Path) -> None:
    add_users(tmp_path / "data")
    settings = acl_settings()
    async with running_server(settings=settings, data_dir=tmp_path / "data") as server:
        alice = await client_of(server, "alice")
        refused = await alice.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation(GRANTS[0])]})
        assert refused.results[0].error_code == CLUSTER_DENIED  # only ALTER on the cluster may
        await alice.close()
        admin = await client_of(server, "admin")
        bad = creation(acl(TOPIC, "t", "alice", READ))
        answer = await admin.request(
            ApiKey.CREATE_ACLS, 3, {"creations": [creation(a) for a in GRANTS] + [bad]}
        )
        assert [r.error_code for r in answer.results] == [0, 0, INVALID_REQUEST]
        assert "is not TYPE:NAME" in answer.results[2].error_message
        await admin.close()
    async with running_server(settings=settings, data_dir=tmp_path / "data") as server:
        admin = await client_of(server, "admin")
        described = await admin.request(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER)
        found = {
            (r.resource_type, r.resource_name, r.pattern_type, a.principal, a.operation)
            for r in described.resources
            for a in r.acls
        }
        assert found == {(3, "team-", 4, "User:alice", 3), (2, "visible", 3, "User:*", 2)}
        deleted = await admin.request(
            ApiKey.DELETE_ACLS, 3, {"filters": [{**ANY_FILTER, "resource_type_filter": 3}]}
        )
        assert [a.resource_name for a in deleted.filter_results[0].matching_acls] == ["team-"]
        left = await admin.request(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER)
        assert [r.resource_name for r in left.resources] == ["visible"]
        await admin.close()


async def test_without_an_authorizer_the_acl_apis_are_disabled(tmp_path: Path) -> None:
    async with running_server() as server:
        client = await WireClient.connect(server.host, server.port)
        answer = await client.request(ApiKey.DESCRIBE_ACLS, 1, ANY_FILTER)
        assert answer.error_code == SECURITY_DISABLED
        await client.close()


async def test_group_apis_need_read_on_the_group(node: RunningServer) -> None:
    await grant(node)
    bob, alice = await client_of(node, "bob"), await client_of(node, "alice")
    for client, allowed in ((alice, True), (bob, False)):
        joined = await client.request(ApiKey.JOIN_GROUP, 5, join("team-a"))
        assert (joined.error_code == GROUP_DENIED) is not allowed
        beat = await client.request(
            ApiKey.HEARTBEAT,
            4,
            {"group_id": "team-a", "generation_id": 1, "member_id": "m", "group_instance_id": None},
        )
        assert (beat.error_code == GROUP_DENIED) is not allowed
    commit = await bob.request(OFFSET_COMMIT, 8, offset_commit("team-a", "visible"))
    assert commit.topics[0].partitions[0].error_code == GROUP_DENIED
    fetched = await bob.request(
        OFFSET_FETCH,
        8,
        {
            "groups": [
                {"group_id": "team-a", "topics": None},
                {"group_id": "other", "topics": None},
            ],
            "require_stable": False,
        },
    )
    assert [(g.group_id, g.error_code) for g in fetched.groups] == [
        ("team-a", GROUP_DENIED),
        ("other", GROUP_DENIED),
    ]
    found = await alice.request(
        FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["team-a", "x"]}
    )
    assert [(c.key, c.error_code) for c in found.coordinators] == [("team-a", 0), ("x", 30)]
    described = await alice.request(
        ApiKey.DESCRIBE_GROUPS,
        5,
        {"groups": ["x", "team-a"], "include_authorized_operations": False},
    )
    assert [(g.group_id, g.error_code) for g in described.groups] == [("x", 30), ("team-a", 0)]
    listed = await bob.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    assert [g.group_id for g in listed.groups] == []  # bob may describe no group
    listed = await alice.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    assert [g.group_id for g in listed.groups] == ["team-a"]
    deleted = await bob.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["team-a"]})
    assert deleted.results[0].error_code == GROUP_DENIED
    await alice.close()
    await bob.close()


async def test_topic_apis_need_their_operation_on_the_topic(node: RunningServer) -> None:
    await grant(node)
    bob = await client_of(node, "bob")
    everything = await bob.request(
        METADATA,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert [t.name for t in everything.topics] == ["visible"]  # hidden is left out
    named = await bob.request(
        METADATA,
        12,
        {
            "topics": [{"name": "hidden", "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert named.topics[0].error_code == TOPIC_DENIED
    every_partition = {"topics": [], "response_partition_limit": 2000, "cursor": None}
    paged = await bob.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, every_partition)
    assert [t.name for t in paged.topics] == ["visible"]  # hidden and __consumer_offsets left out
    assert paged.topics[0].topic_authorized_operations == TOPIC_OPERATIONS  # ALL for User:*
    paged = await bob.request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, every_partition | {"topics": [{"name": "hidden"}]}
    )
    assert [(t.name, t.error_code, t.partitions) for t in paged.topics] == [
        ("hidden", TOPIC_DENIED, ())
    ]
    from coordinator.testing.server import record_batch

    produced = await bob.request(
        PRODUCE,
        9,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {
                    "name": "hidden",
                    "partition_data": [{"index": 0, "records": record_batch([b"x"])}],
                },
                {
                    "name": "visible",
                    "partition_data": [{"index": 0, "records": record_batch([b"y"])}],
                },
            ],
        },
    )
    codes = {r.name: r.partition_responses[0].error_code for r in produced.responses}
    assert codes == {"hidden": TOPIC_DENIED, "visible": 0}
    fetched = await bob.request(
        FETCH,
        12,
        {
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [
                {
                    "topic": name,
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
                for name in ("hidden", "visible")
            ],
        },
    )
    codes = {r.topic: r.partitions[0].error_code for r in fetched.responses}
    assert codes == {"hidden": TOPIC_DENIED, "visible": 0}
    offsets = await bob.request(
        LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "hidden",
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    assert offsets.topics[0].partitions[0].error_code == TOPIC_DENIED
    await bob.close()


async def test_topic_admin_apis_need_their_operation(node: RunningServer) -> None:
    await grant(node)
    admin = await client_of(node, "admin")
    creates = acl(TOPIC, "alice-", "User:alice", Operation.CREATE, pattern=PREFIXED)
    await admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation(creates)]})
    await admin.close()
    alice, bob = await client_of(node, "alice"), await client_of(node, "bob")
    new_topic = {
        "name": "alice-new",
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    for client, code in ((bob, TOPIC_DENIED), (alice, 0)):
        made = await client.request(
            ApiKey.CREATE_TOPICS, 7, {"topics": [new_topic], "timeout": 5000, "validate_only": True}
        )
        assert made.topics[0].error_code == code
    gone = await bob.request(
        ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": "hidden", "topic_id": None}], "timeout": 5000}
    )
    assert gone.responses[0].error_code == TOPIC_DENIED
    gone = await bob.request(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["hidden"], "timeout": 5000})
    assert gone.responses[0].error_code == TOPIC_DENIED
    grown = await bob.request(
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "timeout": 5000,
            "validate_only": True,
            "topics": [{"name": "hidden", "count": 2, "assignments": None}],
        },
    )
    assert grown.results[0].error_code == TOPIC_DENIED
    cut = await bob.request(
        ApiKey.DELETE_RECORDS,
        2,
        {
            "timeout": 5000,
            "topics": [{"name": "hidden", "partitions": [{"partition_index": 0, "offset": 0}]}],
        },
    )
    assert cut.topics[0].partitions[0].error_code == TOPIC_DENIED
    configs = await bob.request(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": 2, "resource_name": name, "configuration_keys": None}
                for name in ("hidden", "visible")
            ]
            + [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    codes = {(r.resource_type, r.resource_name): r.error_code for r in configs.results}
    assert codes == {(2, "hidden"): TOPIC_DENIED, (2, "visible"): 0, (4, "1"): CLUSTER_DENIED}
    altered = await bob.request(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "validate_only": True,
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "hidden",
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
                }
            ],
        },
    )
    assert altered.responses[0].error_code == TOPIC_DENIED
    await alice.close()
    await bob.close()


async def test_offsets_of_topics_the_principal_may_not_see(node: RunningServer) -> None:
    await grant(node)
    alice = await client_of(node, "alice")  # READ on team-* groups, nothing on topic hidden
    commit = await alice.request(OFFSET_COMMIT, 8, offset_commit("team-a", "hidden", "visible"))
    codes = {t.name: t.partitions[0].error_code for t in commit.topics}
    assert codes == {"hidden": TOPIC_DENIED, "visible": 0}
    everything = await alice.request(
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": "team-a", "topics": None}], "require_stable": False},
    )
    assert [t.name for t in everything.groups[0].topics] == ["visible"]
    named = await alice.request(
        OFFSET_FETCH,
        3,
        {"group_id": "team-a", "topics": [{"name": "hidden", "partition_indexes": [0]}]},
    )
    assert named.topics[0].partitions[0].error_code == TOPIC_DENIED
    await alice.close()


def test_some_resource_of_a_type_as_kafka_asks_for_idempotent_producers() -> None:
    def any_write(acls: list[Acl], **options: Any) -> bool:
        authorizer = Authorizer(lambda: acls, **options)
        return authorizer.authorize_any("User:bob", "10.0.0.1", WRITE, TOPIC)

    assert not any_write([acl(GROUP, "g", "User:bob", READ)])
    assert any_write([], allow_if_no_acl=True)
    assert any_write([acl(TOPIC, "b-", "User:bob", WRITE, pattern=PREFIXED)])
    assert not any_write(
        [
            acl(TOPIC, "b-", "User:bob", WRITE, pattern=PREFIXED),
            acl(TOPIC, "b", "User:bob", ALL, DENY, pattern=PREFIXED),
        ]
    )
    assert not any_write(
        [acl(TOPIC, "t", "User:bob", WRITE), acl(TOPIC, "*", "User:*", WRITE, DENY)]
    )
    assert any_write([acl(TOPIC, "t", "User:bob", WRITE), acl(TOPIC, "u", "User:bob", WRITE, DENY)])


async def test_idempotent_producers_need_write_somewhere(node: RunningServer) -> None:
    bob = await client_of(node, "bob")
    init = {
        "transactional_id": None,
        "transaction_timeout": 60_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    assert (await bob.request(ApiKey.INIT_PRODUCER_ID, 4, init)).error_code == CLUSTER_DENIED
    await grant(node)  # WRITE (ALL) on the topic "visible" for everyone
    answer = await bob.request(ApiKey.INIT_PRODUCER_ID, 4, init)
    assert answer.error_code == 0 and answer.producer_id >= 0
    await bob.close()


async def test_authorized_operations_say_what_the_client_may_do(node: RunningServer) -> None:
    await grant(node)
    alice, admin = await client_of(node, "alice"), await client_of(node, "admin")
    asked = {
        "topics": [{"name": "visible", "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True,
        "include_cluster_authorized_operations": True,
    }
    as_alice = await alice.request(METADATA, 8, asked)
    as_admin = await admin.request(METADATA, 8, asked)
    assert as_alice.topics[0].topic_authorized_operations == TOPIC_OPERATIONS  # ALL for User:*
    assert as_alice.cluster_authorized_operations == 0
    assert as_admin.cluster_authorized_operations == CLUSTER_OPERATIONS  # a super user
    await alice.request(ApiKey.JOIN_GROUP, 5, join("team-a"))
    described = await alice.request(
        ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["team-a"], "include_authorized_operations": True}
    )
    assert described.groups[0].authorized_operations == (1 << READ) | (1 << DESCRIBE)
    await alice.close()
    await admin.close()


def offset_delete(group: str, *topics: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "topics": [{"name": t, "partitions": [{"partition_index": 0}]} for t in topics],
    }


def answered(reply: Any) -> tuple[int, dict[str, int]]:
    return reply.error_code, {t.name: t.partitions[0].error_code for t in reply.topics}


async def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic(
    node: RunningServer,
) -> None:
    await grant(node)
    admin = await client_of(node, "admin")
    deleter = acl(GROUP, "team-a", "User:alice", Operation.DELETE)
    created = await admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation(deleter)]})
    assert created.results[0].error_code == 0
    for topic in ("visible", "hidden"):  # the admin's commits: an empty group with offsets
        commit = await admin.request(OFFSET_COMMIT, 8, offset_commit("team-a", topic, offset=5))
        assert commit.topics[0].partitions[0].error_code == 0
    alice, bob = await client_of(node, "alice"), await client_of(node, "bob")
    # bob may READ the group's topics but not DELETE the group.
    refused = await bob.request(ApiKey.OFFSET_DELETE, 0, offset_delete("team-a", "visible"))
    assert answered(refused) == (GROUP_DENIED, {})
    # alice may DELETE the group and READ only "visible": "hidden" and a topic that does not
    # exist are denied (not UNKNOWN_TOPIC_OR_PARTITION), "visible" is deleted.
    mixed = await alice.request(
        ApiKey.OFFSET_DELETE, 0, offset_delete("team-a", "hidden", "visible", "nope")
    )
    assert answered(mixed) == (0, {"visible": 0, "hidden": TOPIC_DENIED, "nope": TOPIC_DENIED})
    # Nothing left to delete is still the coordinator's question: its group error wins.
    missing = await alice.request(ApiKey.OFFSET_DELETE, 0, offset_delete("team-absent", "hidden"))
    assert answered(missing) == (GROUP_DENIED, {})  # no DELETE on team-absent either
    deleter = acl(GROUP, "team-absent", "User:alice", Operation.DELETE)
    await admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation(deleter)]})
    missing = await alice.request(ApiKey.OFFSET_DELETE, 0, offset_delete("team-absent", "hidden"))
    assert answered(missing) == (GROUP_ID_NOT_FOUND, {})
    fetched = await admin.request(
        OFFSET_FETCH,
        8,
        {"groups": [{"group_id": "team-a", "topics": None}], "require_stable": False},
    )
    left = {t.name: t.partitions[0].committed_offset for t in fetched.groups[0].topics}
    assert left == {"hidden": 5}
    for client in (admin, alice, bob):
        await client.close()


async def test_client_balance_apis_need_read_on_the_group_and_topics_they_register(
    node: RunningServer,
) -> None:
    await grant(node)
    alice, bob = await client_of(node, "alice"), await client_of(node, "bob")

    def heartbeat(member: str) -> dict[str, Any]:
        return {
            "group_id": "team-cb",
            "member_id": member,
            "member_epoch": 0,
            "source_count": 1,
            "node_id": 0,
            "topics": ["visible"],
            "session_timeout_ms": 10_000,
        }

    refused = await bob.request(ApiKey.CLIENT_BALANCE_HEARTBEAT, 0, heartbeat("bob-node"))
    assert (refused.error_code, refused.member_epoch) == (GROUP_DENIED, -1)
    joined = await alice.request(ApiKey.CLIENT_BALANCE_HEARTBEAT, 0, heartbeat("alice-node"))
    assert joined.error_code == 0

    def partitions(epoch: int, *topics: str) -> dict[str, Any]:
        return {
            "group_id": "team-cb",
            "member_id": "alice-node",
            "member_epoch": epoch,
            "topics": [
                {"name": t, "partitions": [{"partition_index": 0, "bootstrap_offset": -1}]}
                for t in topics
            ],
        }

    registered = await alice.request(
        ApiKey.PARTITION_REGISTER, 0, partitions(joined.member_epoch, "hidden", "visible")
    )
    assert registered.error_code == 0
    assert answered(registered)[1] == {"visible": 0, "hidden": TOPIC_DENIED}
    released = {
        "group_id": "team-cb",
        "member_id": "alice-node",
        "member_epoch": joined.member_epoch,
        "topics": [{"name": "visible", "partitions": [0]}],
    }
    assert (await bob.request(ApiKey.PARTITION_RELEASE, 0, released)).error_code == GROUP_DENIED
    described = await bob.request(ApiKey.CLIENT_BALANCE_DESCRIBE, 0, {"group_ids": ["team-cb"]})
    assert [(g.group_id, g.error_code, g.nodes) for g in described.groups] == [
        ("team-cb", GROUP_DENIED, ())
    ]
    described = await alice.request(
        ApiKey.CLIENT_BALANCE_DESCRIBE, 0, {"group_ids": ["team-cb", "other"]}
    )
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("team-cb", 0),
        ("other", GROUP_DENIED),
    ]
    held = [(h.topic, h.partitions) for h in described.groups[0].nodes[0].held]
    assert held == [("visible", (0,))]
    assert (await alice.request(ApiKey.PARTITION_RELEASE, 0, released)).error_code == 0
    await alice.close()
    await bob.close()


async def test_cluster_admin_apis_need_their_operation_on_the_cluster(
    node: RunningServer,
) -> None:
    """DescribeLogDirs, ListPartitionReassignments: DESCRIBE; ListConfigResources:
    DESCRIBE_CONFIGS; AlterReplicaLogDirs, ElectLeaders, AlterPartitionReassignments: ALTER."""
    bob, admin = await client_of(node, "bob"), await client_of(node, "admin")
    timeout = {"timeout": 5000}
    partition = [{"partition_index": 0, "replicas": [1]}]
    asked = [
        (ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None}),
        (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {**timeout, "topics": None}),
        (ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": ()}),
        (ApiKey.ELECT_LEADERS, 2, {**timeout, "election_type": 0,
                            "topic_partitions": [{"topic": "visible", "partitions": [0]}]}),
        (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, {**timeout,
            "allow_replication_factor_change": True,
            "topics": [{"name": "visible", "partitions": partition}]}),
    ]  # fmt: skip
    for api_key, version, body in asked:
        refused = await bob.request(api_key, version, body)
        allowed = await admin.request(api_key, version, body)
        assert (refused.error_code, allowed.error_code) == (CLUSTER_DENIED, 0), api_key
    refused = await bob.request(ApiKey.ELECT_LEADERS, 2, asked[3][2])
    assert refused.replica_election_results[0].partition_result[0].error_code == CLUSTER_DENIED
    refused = await bob.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, asked[4][2])
    assert refused.responses[0].partitions[0].error_code == CLUSTER_DENIED
    moved = {"dirs": [{"path": str(node.data_dir),
                       "topics": [{"name": "visible", "partitions": [0]}]}]}  # fmt: skip
    refused = await bob.request(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, moved)
    allowed = await admin.request(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, moved)
    assert refused.results[0].partitions[0].error_code == CLUSTER_DENIED
    assert allowed.results[0].partitions[0].error_code == 0
    await bob.close()
    await admin.close()
