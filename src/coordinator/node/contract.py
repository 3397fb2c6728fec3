"""The contract between the wire server and the APIs: registry, broker, request context.

Each API lives in its own module in `coordinator.node.apis` and declares::

    API_KEY: int                      # Kafka api key
    VERSIONS: range                   # advertised versions, inside kio's supported range
    async def handle(request, api_version, ctx) -> ResponseValue

    AUTHORIZATION: Rule | Exempt      # what it asks the authorizer (coordinator.node.authorization)

and optionally `answer_now(request, api_version, ctx)` and `answer_parked(request, api_version,
ctx, answer)` (see `ApiSpec`), `SCHEMAS` (an API of
this project's own, outside Kafka's key range: {version: (request class, response class)}, kio-
style dataclasses that the codec then reads and writes with kio's serializer) and
`answer_unsupported_version(registry)` (the answer to a version outside `VERSIONS`, where Kafka
gives one instead of closing the connection: ApiVersions, KIP-511).

A handler gets the decoded kio request, the request's version and a `RequestContext`, and
returns either a version-agnostic dict (turned into that version's kio response by
`codec.build_response`), a ready kio response, a pre-encoded `codec.EncodedBody`, or `None`
for "send no response" (Produce with acks=0).

The registry is an object, not module state: a server is built from
`coordinator.node.apis.builtin_registry()` and extensions (the group coordinator) add their modules
with `registry.register(module)` before the server starts. ApiVersions answers from the
registry, so every registered API is advertised.

Handlers reach what outlives a request through `ctx.broker`, whose fields are typed: the topics,
the producer id allocator, the settings DescribeConfigs shows and, when the group coordinator
extension runs, its `GroupRuntime`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kio.static.protocol import ResponsePayload

from coordinator.node.config import ServerConfig
from coordinator.node.ownership import NodeAddress, Ownership, SingleNodeOwnership
from coordinator.node.topic_admin import LocalTopicAdmin, TopicAdmin
from coordinator.partition_log.internal import InternalTopics
from coordinator.wire.codec import EncodedBody, kio_versions, register_schemas
from coordinator.wire.transport.listener import advertisable_host
from rebalance.quick_init import quick_init

if TYPE_CHECKING:
    from coordinator.node.access_control import AccessControl
    from coordinator.node.described_configs import BrokerSettings
    from coordinator.partition_log.producer_ids import ProducerIdAllocator
    from coordinator.partition_log.topics import TopicStore
    from coordinator.wire.security.session import Session

ResponseValue = Mapping[str, Any] | ResponsePayload | EncodedBody | None
Handler = Callable[[Any, int, "RequestContext"], Awaitable[ResponseValue]]
ImmediateHandler = Callable[[Any, int, "RequestContext"], ResponseValue]
ParkingHandler = Callable[[Any, int, "RequestContext", Callable[[ResponseValue], None]], None]
UnsupportedVersionAnswer = Callable[["ApiRegistry"], ResponsePayload]

T = TypeVar("T")


class RegistryError(ValueError):
    """An API registration that the server could not honour."""


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API key: the versions advertised and the coroutine answering them.

    `answer_now`, when a module defines it, is tried first, synchronously: it returns the
    response when it can give it at once (a heartbeat with nothing to wait for) and `None`
    otherwise, so the common case skips creating a task for the request.

    `answer_parked`, when a module defines it, replaces `handle` on the wire: it starts the
    request and calls `answer` exactly once with the response, before returning or later from
    the event loop (a JoinGroup parked until its round completes). The server keeps such a
    request as a pending slot of its connection, with no task and no future; `handle` still
    serves callers that want a coroutine.
    """

    api_key: int
    versions: range
    handle: Handler
    name: str = ""
    answer_now: ImmediateHandler | None = None
    answer_unsupported_version: UnsupportedVersionAnswer | None = None
    #: An extension API's own schema classes by version (None: kio's, a Kafka API).
    schemas: Mapping[int, tuple[type[Any], type[Any]]] | None = None
    answer_parked: ParkingHandler | None = None
    #: The module's `AUTHORIZATION`: a `coordinator.node.authorization.Rule`, or `Exempt` with
    #: its reason; `guard` wraps the handler in it when the node has an authorizer.
    authorization: object = None

    @classmethod
    def from_module(cls, module: ModuleType) -> ApiSpec:
        """Read `API_KEY`, `VERSIONS` and `handle` from an API module."""
        try:
            api_key, versions, handle = module.API_KEY, module.VERSIONS, module.handle
        except AttributeError as exc:
            raise RegistryError(
                f"{module.__name__} must define API_KEY, VERSIONS and handle"
            ) from exc
        name = module.__name__.rsplit(".", 1)[-1]
        return cls(
            int(api_key),
            versions,
            handle,
            name,
            getattr(module, "answer_now", None),
            getattr(module, "answer_unsupported_version", None),
            getattr(module, "SCHEMAS", None),
            getattr(module, "answer_parked", None),
            getattr(module, "AUTHORIZATION", None),
        )


class ApiRegistry:
    """api_key → `ApiSpec`; checked against kio so that every advertised version decodes."""

    def __init__(self) -> None:
        self._apis: dict[int, ApiSpec] = {}
        self._derived: dict[Hashable, object] = {}

    def register(self, api: ApiSpec | ModuleType, *, replace: bool = False) -> ApiSpec:
        spec = api if isinstance(api, ApiSpec) else ApiSpec.from_module(api)
        if spec.schemas is not None:
            register_schemas(spec.api_key, spec.schemas)
        supported = kio_versions(spec.api_key)
        versions = spec.versions
        if not versions or versions.step != 1:
            raise RegistryError(f"api {spec.api_key}: VERSIONS must be a non-empty range")
        if versions.start < supported.start or versions.stop > supported.stop:
            raise RegistryError(
                f"api {spec.api_key}: versions {versions.start}-{versions.stop - 1} are outside "
                f"kio's {supported.start}-{supported.stop - 1}"
            )
        if spec.api_key in self._apis and not replace:
            raise RegistryError(f"api {spec.api_key} is already registered")
        self._apis[spec.api_key] = spec
        self._derived.clear()
        return spec

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from the registered APIs, cached until the next registration."""
        if key not in self._derived:
            self._derived[key] = compute()
        return cast(T, self._derived[key])

    def get(self, api_key: int) -> ApiSpec | None:
        return self._apis.get(api_key)

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(sorted(self._apis.values(), key=lambda spec: spec.api_key))

    def __len__(self) -> int:
        return len(self._apis)


@dataclass(eq=False)
class Broker:
    """Everything a handler may consult that outlives a single request."""

    config: ServerConfig
    topics: TopicStore
    registry: ApiRegistry
    host: str
    port: int
    data_dir: Path
    producer_ids: ProducerIdAllocator
    #: What DescribeConfigs shows for the broker; extensions add their own settings.
    settings: BrokerSettings
    #: The group coordinator's runtime, when its extension runs (`coordinator.groups.extension`);
    #: the group APIs read it through `coordinator.groups.apis.common.group_runtime`.
    groups: object | None = None
    internal_topics: InternalTopics = field(default_factory=InternalTopics)
    """Topics the node's services own (`__consumer_offsets`): see
    `coordinator.partition_log.internal`."""
    closing: bool = False
    #: ACLs and the authorizer, when `authorizer.class.name` is set
    #: (`coordinator.node.access_control`).
    access: AccessControl | None = None
    #: Who coordinates which `__consumer_offsets` partition (`coordinator.node.ownership`):
    #: this node alone, unless cluster mode puts its lease holder here before the group
    #: coordinator's extension starts. FindCoordinator, Metadata and the group replies ask it.
    ownership: Ownership = field(init=False)
    #: Who decides topic changes (`coordinator.node.topic_admin`): this node's `topics`, unless
    #: cluster mode puts its PostgreSQL catalogue here. Every create, delete, growth and config
    #: change of a topic goes through it; reads go to `topics`, which follows it.
    topic_admin: TopicAdmin = field(init=False)

    def __post_init__(self) -> None:
        self.ownership = SingleNodeOwnership(NodeAddress(self.node_id, self.host, self.port))
        self.topic_admin = LocalTopicAdmin(self.topics)

    @property
    def node_id(self) -> int:
        return self.config.node_id

    def partition_count(self, topic: str) -> int | None:
        """How many partitions `topic` has on this node; None if there is no such topic (what
        Kafka's brokers ask their metadata cache before accepting offsets for a partition)."""
        internal = self.internal_topics.get(topic)
        if internal is not None:
            return internal.partition_count
        found = self.topics.get(topic)
        return None if found is None else len(found.partitions)

    def begin_closing(self) -> None:
        """From now on handlers finish quickly: long-polling fetches wake up and return."""
        self.closing = True
        self.topics.notify_appended()

    def replace_address(self, host: str, port: int) -> None:
        """Set the advertised address once the listening port is known: the configured one,
        else the bound one (a wildcard bind advertises the host name)."""
        self.host = self.config.advertised_host or advertisable_host(host)
        self.port = self.config.advertised_port or port
        if isinstance(self.ownership, SingleNodeOwnership):
            self.ownership.node = NodeAddress(self.node_id, self.host, self.port)


@quick_init  # built for every request
@dataclass(frozen=True, slots=True)
class RequestContext:
    """Per-request facts. A client is never identified by its connection; `session` is its
    connection's security state (listener, principal), None outside the wire server."""

    broker: Broker
    correlation_id: int
    client_id: str | None
    peer: str
    session: Session | None = None

    def advertised_address(self) -> tuple[str, int]:
        """The node's address as told to this client: the advertised address of the listener
        it connected to (Kafka's per-listener `advertised.listeners`)."""
        if self.session is not None:
            return self.session.listener.advertised
        return self.broker.host, self.broker.port
