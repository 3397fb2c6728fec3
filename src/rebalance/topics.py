"""What the core knows of the cluster's topics: the shell's snapshot, handed to every group type.

Consumer groups assign on the server and client-balance groups register only partitions that
exist, so the core must know the topics; the shell pushes a new snapshot whenever a topic is
created, grows or is deleted (`GroupCoordinatorCore.topics_changed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """What the core knows of the cluster's topics: a snapshot the shell hands over whenever
    topics are created, grow or are deleted (`GroupCoordinatorCore.topics_changed`)."""

    topics: Mapping[str, TopicInfo] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Iterable[TopicInfo]) -> TopicMetadata:
        return cls({t.name: t for t in topics})

    def by_id(self) -> dict[str, TopicInfo]:
        return {t.topic_id: t for t in self.topics.values()}
