"""Whitelist and blacklist subscriptions (`kafka.consumer.TopicFilter`, 0.8.2).

The regex is normalised as 0.8 does it: trimmed, every `,` becomes `|` (so "a,b" lists two
topics), spaces are removed, and leading and trailing quotes go ("property files may bring
quotes"). A whitelist allows a topic its regex matches *entirely* (`String.matches`); a
blacklist allows the topics it does not match; either way the internal topic
`__consumer_offsets` is left out while `exclude.internal.topics` is true.

We differ in one respect we cannot avoid: the regex is Python's `re`, not `java.util.regex`.
The common syntax (classes, alternation, quantifiers, anchors, possessive quantifiers) is the
same; Java-only constructs such as `\\p{Alpha}` or `(?<name>...)` are rejected as invalid.
In 0.8.0 a whitelist of plain names needed no topic watcher; from 0.8.2 on (followed here)
every wildcard consumer watches `/brokers/topics`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rebalance.zookeeper.formats import BLACK_LIST, WHITE_LIST

INTERNAL_TOPICS = frozenset({"__consumer_offsets"})
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim: every char <= ' '


class InvalidTopicFilter(ValueError):
    """The filter's regex does not compile."""


def normalise(raw: str) -> str:
    regex = raw.strip(_JAVA_TRIMMED).replace(",", "|").replace(" ", "")
    return regex.lstrip("\"'").rstrip("\"'")


@dataclass(frozen=True)
class TopicFilter:
    """`Whitelist(raw)` (pattern `white_list`) or `Blacklist(raw)` (`black_list`)."""

    raw: str
    pattern: str = WHITE_LIST
    regex: str = field(init=False)
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.pattern not in (WHITE_LIST, BLACK_LIST):
            raise ValueError(f"a topic filter is a white_list or a black_list, not {self.pattern}")
        regex = normalise(self.raw)
        try:
            compiled = re.compile(regex)
        except re.error:
            raise InvalidTopicFilter(f"{regex} is an invalid regex.") from None
        object.__setattr__(self, "regex", regex)
        object.__setattr__(self, "_compiled", compiled)

    def allows(self, topic: str, exclude_internal_topics: bool = True) -> bool:
        matches = self._compiled.fullmatch(topic) is not None
        allowed = matches if self.pattern == WHITE_LIST else not matches
        return allowed and not (exclude_internal_topics and topic in INTERNAL_TOPICS)


def whitelist(raw: str) -> TopicFilter:
    return TopicFilter(raw, WHITE_LIST)


def blacklist(raw: str) -> TopicFilter:
    return TopicFilter(raw, BLACK_LIST)
