"""Who decides a topic change: `TopicAdmin`, the one door every create, delete, growth and
config change of a topic goes through.

A single node decides for itself (`LocalTopicAdmin`: the node's `TopicStore`, as it always
was). In cluster mode the catalogue in PostgreSQL decides (`coordinator.cluster.topic_catalogue`)
and the node's store follows it. The APIs (CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs, IncrementalAlterConfigs, Metadata's auto-creation) check what they can against
the node's own view first, then ask the admin, which may still refuse with one of the errors
below: the view was behind the catalogue (another node changed the topic a moment ago).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Protocol

from coordinator.partition_log.topics import Topic, TopicStore


class TopicChangeRefused(Exception):
    """The catalogue refused a change the node's view allowed."""


class TopicExistsError(TopicChangeRefused):
    """TOPIC_ALREADY_EXISTS: the name was taken (on another node, a moment ago)."""


class TopicCollisionError(TopicChangeRefused):
    """INVALID_TOPIC_EXCEPTION: the name collides with `existing` once '.' and '_' are alike."""

    def __init__(self, name: str, existing: str) -> None:
        super().__init__(f"Topic '{name}' collides with existing topic: {existing}")
        self.existing = existing


class UnknownTopicError(TopicChangeRefused):
    """UNKNOWN_TOPIC_OR_PARTITION: the topic was deleted (on another node, a moment ago)."""


class PartitionCountError(TopicChangeRefused):
    """INVALID_PARTITIONS: the topic already has `current` partitions, at least those asked."""

    def __init__(self, current: int, wanted: int) -> None:
        message = (
            f"Topic already has {current} partitions."
            if current == wanted
            else f"Topic currently has {current} partitions, which is higher than the requested "
            f"{wanted}."
        )
        super().__init__(message)
        self.current = current


class CatalogueUnavailableError(TopicChangeRefused):
    """The catalogue cannot be reached now: nothing changed (REQUEST_TIMED_OUT, retriable)."""


class TopicAdmin(Protocol):
    async def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        new: bool = False,
    ) -> Topic:
        """Create a topic. One of that name that exists is returned unchanged, unless `new`
        (CreateTopics, which checked the node's view first): then `TopicExistsError` if it
        appeared elsewhere meanwhile."""
        ...

    async def delete(self, topic: Topic) -> None:
        """Delete `topic` (the caller then awaits `TopicStore.announce_deleted`)."""
        ...

    async def add_partitions(self, topic: Topic, total: int) -> None: ...

    async def set_configs(self, topic: Topic, configs: Mapping[str, str]) -> None: ...

    async def find(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        """A topic the node's view does not have yet, looked up where topics are decided."""
        ...


class LocalTopicAdmin:
    """A single node: its `TopicStore` decides alone, and nothing is elsewhere."""

    def __init__(self, topics: TopicStore) -> None:
        self.topics = topics

    async def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        new: bool = False,
    ) -> Topic:
        return self.topics.create(name, partitions, configs)  # nothing else creates topics

    async def delete(self, topic: Topic) -> None:
        self.topics.delete(topic)

    async def add_partitions(self, topic: Topic, total: int) -> None:
        self.topics.add_partitions(topic, total)

    async def set_configs(self, topic: Topic, configs: Mapping[str, str]) -> None:
        self.topics.set_configs(topic, configs)

    async def find(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        return None
