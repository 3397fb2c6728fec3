"""ACLs with the real client libraries: confluent-kafka's and kafka-python's admin clients
create, describe and delete them (CreateAcls/DescribeAcls/DeleteAcls); then a principal with
READ on a group forms it and commits with each library, and a principal without it gets
GROUP_AUTHORIZATION_FAILED from aiokafka, kafka-python and confluent-kafka alike. One server for
the module (PLAINTEXT for seeding records, SASL_PLAINTEXT with PLAIN for the users)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from clients import (
    LIBRARIES,
    Security,
    confluent_options,
    consume_and_commit,
    group_refusal,
    kafka_python_options,
    seed,
)

from coordinator.testing.server import RunningServer, server_in_thread
from coordinator.wire.security.credentials import CredentialStore

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TOPIC = "acl-topic"
PARTITIONS = 3
PER_PARTITION = 2
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def user(name: str) -> Security:
    return Security("SASL_PLAINTEXT", mechanism="PLAIN", username=name, password=f"{name}-pw")


def confluent_admin(bootstrap: str, name: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, **confluent_options(user(name))})


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    data_dir = tmp_path_factory.mktemp("acls") / "data"
    data_dir.mkdir()
    store = CredentialStore(data_dir)
    for name in ("admin", "alice", "bob"):
        store.add(name, f"{name}-pw")
    store.close()
    settings = [
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        f"authorizer.class.name={STANDARD}",
        "super.users=User:admin",
        "group.initial.rebalance.delay.ms=0",
    ]
    with server_in_thread(
        topics=[(TOPIC, PARTITIONS)], settings=settings, data_dir=data_dir
    ) as server:
        admin = confluent_admin(server.bootstrap_of("SASL_PLAINTEXT"), "admin")
        grants = [
            AclBinding(
                ResourceType.GROUP,
                "team-",
                ResourcePatternType.PREFIXED,
                "User:alice",
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            ),
            AclBinding(
                ResourceType.TOPIC,
                "*",
                ResourcePatternType.LITERAL,
                "User:*",
                "*",
                AclOperation.ALL,
                AclPermissionType.ALLOW,
            ),
        ]
        for future in admin.create_acls(grants, request_timeout=10).values():
            future.result()
        seed(server.bootstrap_of("PLAINTEXT"), TOPIC, PARTITIONS, PER_PARTITION)
        yield server


def test_admin_clients_describe_create_and_delete_acls(node: RunningServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KafkaResourceType

    bootstrap = node.bootstrap_of("SASL_PLAINTEXT")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_python_options(user("admin")))
    try:
        extra = ACL(
            "User:bob",
            "*",
            ACLOperation.DESCRIBE,
            ACLPermissionType.ALLOW,
            ResourcePattern(KafkaResourceType.GROUP, "audit", ACLResourcePatternType.LITERAL),
        )
        created = admin.create_acls([extra])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        everything = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KafkaResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        acls, error = admin.describe_acls(everything)
        assert error.errno == 0
        assert {(a.principal, a.resource_pattern.resource_name) for a in acls} == {
            ("User:alice", "team-"),
            ("User:*", "*"),
            ("User:bob", "audit"),
        }
    finally:
        admin.close()

    confluent = confluent_admin(bootstrap, "admin")
    audit = AclBindingFilter(
        ResourceType.GROUP,
        "audit",
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    (deleted,) = confluent.delete_acls([audit], request_timeout=10).values()
    assert [b.principal for b in deleted.result()] == ["User:bob"]
    left = confluent.describe_acls(
        AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        ),
        request_timeout=10,
    ).result()
    assert sorted(b.name for b in left) == ["*", "team-"]
    bob = confluent_admin(bootstrap, "bob")
    grab = AclBinding(
        ResourceType.GROUP,
        "team-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    (refused,) = bob.create_acls([grab], request_timeout=10).values()
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        refused.result()


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_principal_with_read_on_the_group_consumes_and_commits(
    node: RunningServer, lib: str
) -> None:
    read, committed = consume_and_commit(
        lib,
        node.bootstrap_of("SASL_PLAINTEXT"),
        user("alice"),
        topic=TOPIC,
        group=f"team-{lib}",
        count=PARTITIONS * PER_PARTITION,
    )
    assert read == PARTITIONS * PER_PARTITION
    assert committed == {p: PER_PARTITION for p in range(PARTITIONS)}


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_principal_without_read_on_the_group_gets_group_authorization_failed(
    node: RunningServer, lib: str
) -> None:
    error = group_refusal(
        lib, node.bootstrap_of("SASL_PLAINTEXT"), user("bob"), topic=TOPIC, group=f"team-{lib}"
    )
    expected = "GROUP_AUTHORIZATION_FAILED" if lib == "confluent" else "[Error 30]"
    assert expected in error and ("team-" in error or lib == "confluent")
