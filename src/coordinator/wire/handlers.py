"""The API registry: which API keys and versions this server answers, and with which handler.

Each API lives in its own module (see `coordinator.wire.apis`) that declares::

    API_KEY: int                      # Kafka api key
    VERSIONS: range                   # advertised versions, inside kio's supported range
    async def handle(request, api_version, ctx) -> ResponseValue

A handler gets the decoded kio request, the request's version and a `RequestContext`, and
returns either a version-agnostic dict (turned into that version's kio response by
`codec.build_response`), a ready kio response, a pre-encoded `codec.EncodedBody`, or `None`
for "send no response" (Produce with acks=0).

The registry is an object, not module state: a server is built from `builtin_registry()` and
other packages (the group coordinator) add their modules with `registry.register(module)`
before the server starts. ApiVersions answers from the registry, so every registered API is
advertised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kio.static.protocol import ResponsePayload

from coordinator.config import ServerConfig
from coordinator.wire.codec import EncodedBody, kio_versions
from coordinator.wire.listener import advertisable_host

if TYPE_CHECKING:
    from coordinator.log.topics import TopicStore

ResponseValue = Mapping[str, Any] | ResponsePayload | EncodedBody | None
Handler = Callable[[Any, int, "RequestContext"], Awaitable[ResponseValue]]
ImmediateHandler = Callable[[Any, int, "RequestContext"], ResponseValue]

T = TypeVar("T")


class RegistryError(ValueError):
    """An API registration that the server could not honour."""


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API key: the versions advertised and the coroutine answering them.

    `answer_now`, when a module defines it, is tried first, synchronously: it returns the
    response when it can give it at once (a heartbeat with nothing to wait for) and `None`
    otherwise, so the common case skips creating a task for the request.
    """

    api_key: int
    versions: range
    handle: Handler
    name: str = ""
    answer_now: ImmediateHandler | None = None

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
        return cls(int(api_key), versions, handle, name, getattr(module, "answer_now", None))


class ApiRegistry:
    """api_key → `ApiSpec`; checked against kio so that every advertised version decodes."""

    def __init__(self) -> None:
        self._apis: dict[int, ApiSpec] = {}
        self._derived: dict[Hashable, object] = {}

    def register(self, api: ApiSpec | ModuleType, *, replace: bool = False) -> ApiSpec:
        spec = api if isinstance(api, ApiSpec) else ApiSpec.from_module(api)
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


class Services:
    """Typed lookup of long-lived objects that handlers need (e.g. the group runtime)."""

    def __init__(self) -> None:
        self._items: dict[type[Any], object] = {}

    def add(self, service: object, *, as_type: type[Any] | None = None) -> None:
        self._items[as_type or type(service)] = service

    def get(self, kind: type[T]) -> T:
        try:
            return cast(T, self._items[kind])
        except KeyError:
            raise LookupError(f"no service of type {kind.__name__} is registered") from None


@dataclass(eq=False)
class Broker:
    """Everything a handler may consult that outlives a single request."""

    config: ServerConfig
    topics: TopicStore
    registry: ApiRegistry
    host: str
    port: int
    data_dir: Path
    services: Services = field(default_factory=Services)
    closing: bool = False

    @property
    def node_id(self) -> int:
        return self.config.node_id

    def partition_count(self, topic: str) -> int | None:
        """How many partitions `topic` has on this node; None if there is no such topic (what
        Kafka's brokers ask their metadata cache before accepting offsets for a partition)."""
        found = self.topics.get(topic)
        return None if found is None else len(found.partitions)

    def replace_address(self, host: str, port: int) -> None:
        """Set the advertised address once the listening port is known: the configured one,
        else the bound one (a wildcard bind advertises the host name)."""
        self.host = self.config.advertised_host or advertisable_host(host)
        self.port = self.config.advertised_port or port


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Per-request facts. A client is never identified by its connection."""

    broker: Broker
    correlation_id: int
    client_id: str | None
    peer: str


def builtin_registry() -> ApiRegistry:
    """The registry with this package's APIs (group APIs are added by the group coordinator)."""
    from coordinator.wire.apis import BUILTIN_APIS

    registry = ApiRegistry()
    for module in BUILTIN_APIS:
        registry.register(module)
    return registry
