"""ConsumerProtocol codecs against the spec's hex vectors (Java, kio and kafka-python agree)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_python_peer import (
    ConsumerProtocolSubscription,
    KafkaTopicPartition,
    StickyPartitionAssignor,
)

from assignors.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    StickyUserData,
    Subscription,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)

V1 = "0000000000020002743000027431ffffffff"
V2_V3 = (
    "0003000000020002743000027431ffffffff000000010002743000000002000000000000000200000005"
    "00067261636b2d61"
)
V2_V1 = "0001000000020002743000027431ffffffff0000000100027430000000020000000000000002"
V3_ASSIGNMENT = "00000000000200027430000000020000000000000001000274310000000100000002ffffffff"
V4_STICKY_V1 = "000000010002743000000002000000000000000200000005"
V4_STICKY_V0 = "0000000100027430000000020000000000000002"
V4_AIOKAFKA_EMBEDDED = (
    "0000000000010002743000000018000000010002743000000002000000000000000200000005"
)
V6_LIBRDKAFKA = "00030000000200027430000274310000000000000000ffffffffffff"
V6_JAVA = "0003000000020002743000027431ffffffff0000000000000007ffff"

OWNED = (("t0", 2), ("t0", 0))  # Java sorts owned partitions; so do we


def test_v1_subscription_v0_null_user_data() -> None:
    assert encode_subscription(Subscription(("t0", "t1"), version=0)).hex() == V1
    empty = Subscription(("t0", "t1"), user_data=b"", version=0)
    assert encode_subscription(empty).hex() == V1[:-8] + "00000000"


def test_v2_subscription_all_versions() -> None:
    sub = Subscription(("t1", "t0"), None, OWNED, 5, "rack-a")
    assert encode_subscription(sub).hex() == V2_V3
    assert encode_subscription(sub, 1).hex() == V2_V1
    assert encode_subscription(sub, 2).hex() == V2_V1.replace("0001", "0002", 1) + "00000005"
    decoded = decode_subscription(bytes.fromhex(V2_V3))
    assert decoded == Subscription(("t0", "t1"), None, (("t0", 0), ("t0", 2)), 5, "rack-a", 3)


def test_v3_assignment_v0_and_v3() -> None:
    assignment = Assignment((("t0", 0), ("t0", 1), ("t1", 2)), version=0)
    assert encode_assignment(assignment).hex() == V3_ASSIGNMENT
    assert encode_assignment(assignment, 3).hex() == "0003" + V3_ASSIGNMENT[4:]
    assert decode_assignment(bytes.fromhex(V3_ASSIGNMENT)) == assignment


def test_v4_sticky_user_data_layouts() -> None:
    assert encode_sticky_user_data(OWNED, 5).hex() == V4_STICKY_V1
    assert encode_sticky_user_data(OWNED, None).hex() == V4_STICKY_V0
    assert decode_sticky_user_data(bytes.fromhex(V4_STICKY_V1)) == StickyUserData(
        (("t0", 0), ("t0", 2)), 5
    )
    assert decode_sticky_user_data(bytes.fromhex(V4_STICKY_V0)) == StickyUserData(
        (("t0", 0), ("t0", 2)), None
    )
    embedded = Subscription(("t0",), bytes.fromhex(V4_STICKY_V1), version=0)
    assert encode_subscription(embedded).hex() == V4_AIOKAFKA_EMBEDDED


def test_v5_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(5).hex() == "00000005"
    assert decode_cooperative_user_data(bytes.fromhex("00000005")) == 5


def test_v6_librdkafka_and_java_range_subscriptions() -> None:
    librdkafka = decode_subscription(bytes.fromhex(V6_LIBRDKAFKA))
    assert librdkafka == Subscription(("t0", "t1"), b"", (), -1, None, 3)
    assert encode_subscription(librdkafka).hex() == V6_LIBRDKAFKA
    java = Subscription(("t0", "t1"), generation=7)
    assert encode_subscription(java).hex() == V6_JAVA


def test_v7_future_versions_read_as_v3_ignoring_trailing_bytes() -> None:
    future = bytes.fromhex("0004" + V2_V3[4:]) + b"\x01\x02\x03"
    decoded = decode_subscription(future)
    assert decoded.version == 4
    assert decoded.rack == "rack-a" and decoded.generation == 5


def test_kafka_python_encoder_agrees_byte_for_byte() -> None:
    theirs = ConsumerProtocolSubscription(0, ["t0", "t1"], b"").encode()
    ours = encode_subscription(Subscription(("t0", "t1"), b"", version=0))
    assert bytes(theirs) == ours


def test_kafka_python_sticky_user_data_is_non_standard_and_rejected() -> None:
    """kafka-python prefixes its sticky user data with a version; Java (and we) cannot read it."""
    previous = [KafkaTopicPartition("t0", 0), KafkaTopicPartition("t0", 2)]
    subscription = StickyPartitionAssignor._metadata(["t0"], previous, 5)
    theirs = decode_subscription(bytes(subscription.encode())).user_data
    assert theirs is not None
    assert theirs.hex() == "0001" + V4_STICKY_V1
    assert encode_sticky_user_data(OWNED, 5).hex() == V4_STICKY_V1
    with pytest.raises(ConsumerProtocolError):
        decode_sticky_user_data(theirs)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        bytes.fromhex("ffff"),
        bytes.fromhex("0000"),
        bytes.fromhex("000000000001"),
        bytes.fromhex(V3_ASSIGNMENT)[:-3],
        bytes.fromhex("0000000000010002ffff"),
    ],
)
def test_malformed_assignment_raises_never_empty(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(data)


@pytest.mark.parametrize(
    "data", [b"", bytes.fromhex(V2_V3)[:20], bytes.fromhex("00000000000100fe")]
)
def test_malformed_subscription_raises(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


@pytest.mark.parametrize(
    "data", ["ffffffff", "0000000100", "00000001000274300000000500000000", "0000000000"]
)
def test_malformed_sticky_user_data_raises(data: str) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_sticky_user_data(bytes.fromhex(data))


def test_unknown_version_is_refused_on_encode() -> None:
    with pytest.raises(ValueError):
        encode_subscription(Subscription(("t0",)), 4)


names = st.text("abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=8)
partitions = st.lists(st.tuples(names, st.integers(0, 2**31 - 1)), unique=True, max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    topics=st.lists(names, unique=True, max_size=5),
    user_data=st.none() | st.binary(max_size=16),
    owned=partitions,
    generation=st.integers(-1, 2**31 - 1),
    rack=st.none() | names,
    version=st.integers(0, 3),
)
def test_subscription_round_trip(topics, user_data, owned, generation, rack, version) -> None:  # type: ignore[no-untyped-def]
    sub = Subscription(tuple(topics), user_data, tuple(owned), generation, rack, version)
    decoded = decode_subscription(encode_subscription(sub))
    assert decoded.topics == tuple(sorted(topics))
    assert decoded.user_data == user_data
    assert decoded.owned_partitions == (tuple(sorted(owned)) if version >= 1 else ())
    assert decoded.generation == (generation if version >= 2 else -1)
    assert decoded.rack == (rack if version >= 3 else None)


@settings(max_examples=150, deadline=None)
@given(owned=partitions, generation=st.none() | st.integers(-(2**31), 2**31 - 1))
def test_sticky_user_data_round_trip(owned, generation) -> None:  # type: ignore[no-untyped-def]
    decoded = decode_sticky_user_data(encode_sticky_user_data(owned, generation))
    assert decoded == StickyUserData(tuple(sorted(owned)), generation)
