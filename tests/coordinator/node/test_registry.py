"""The API registry: what can be registered, and that another package can add APIs."""

from __future__ import annotations

import types
from typing import Any

import pytest

from coordinator.node.apis import builtin_registry
from coordinator.node.contract import (
    ApiRegistry,
    ApiSpec,
    RegistryError,
    RequestContext,
    ResponseValue,
)


async def answer(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return {"error_code": 0}


def heartbeat_module(versions: range) -> types.ModuleType:
    module = types.ModuleType("apis.heartbeat")
    module.API_KEY = 12  # type: ignore[attr-defined]
    module.VERSIONS = versions  # type: ignore[attr-defined]
    module.handle = answer  # type: ignore[attr-defined]
    return module


def test_builtin_registry_has_the_server_apis() -> None:
    assert [spec.api_key for spec in builtin_registry()] == [
        0, 1, 2, 3, 10, 17, 18, 19, 20, 21, 22, 29, 30, 31, 32, 33, 34, 35, 36, 37, 43, 44, 45, 46,
        50, 51, 60, 74, 75,
    ]  # fmt: skip


def test_a_module_can_be_registered_next_to_the_builtins() -> None:
    registry = builtin_registry()
    spec = registry.register(heartbeat_module(range(0, 5)))
    assert registry.get(12) is spec
    assert (spec.name, spec.versions) == ("heartbeat", range(0, 5))


@pytest.mark.parametrize(
    ("versions", "message"),
    [(range(0, 6), "outside kio's 0-4"), (range(0), "non-empty"), (range(0, 5, 2), "non-empty")],
)
def test_versions_must_be_decodable_by_kio(versions: range, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        ApiRegistry().register(heartbeat_module(versions))


def test_duplicate_registration_needs_replace() -> None:
    registry = ApiRegistry()
    registry.register(heartbeat_module(range(0, 5)))
    with pytest.raises(RegistryError, match="already registered"):
        registry.register(heartbeat_module(range(0, 5)))
    registry.register(ApiSpec(12, range(3, 5), answer), replace=True)
    spec = registry.get(12)
    assert spec is not None and spec.versions == range(3, 5)


def test_module_without_the_contract_is_refused() -> None:
    with pytest.raises(RegistryError, match="must define API_KEY, VERSIONS and handle"):
        ApiRegistry().register(types.ModuleType("incomplete"))


def test_derived_values_are_recomputed_after_registration() -> None:
    registry = ApiRegistry()
    assert registry.derived("count", lambda: len(registry)) == 0
    registry.register(heartbeat_module(range(0, 5)))
    assert registry.derived("count", lambda: len(registry)) == 1
