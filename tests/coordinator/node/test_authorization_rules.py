"""Every API the node can register declares, beside its handler, what it asks the authorizer:
a `Rule`, or `Exempt` with its reason; an API that declares neither is refused rather than
left open."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from coordinator.groups.apis import GROUP_APIS
from coordinator.node.access_control import AccessControl
from coordinator.node.apis import BUILTIN_APIS, builtin_registry
from coordinator.node.authorization import Exempt, Rule, guard
from coordinator.node.contract import ApiSpec, RegistryError
from coordinator.wire.api_keys import ApiKey

EVERY_API = (*BUILTIN_APIS, *GROUP_APIS)

#: Answered before there is a principal. (No handler checks authorization itself: the ACL APIs
#: declare their cluster check as a `Rule` too.)
EXEMPT = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


def _name(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[-1]


@pytest.mark.parametrize("module", EVERY_API, ids=_name)
def test_every_api_declares_its_rule_or_why_it_is_exempt(module: ModuleType) -> None:
    declared = module.AUTHORIZATION
    assert isinstance(module.API_KEY, ApiKey)
    if module.API_KEY in EXEMPT:
        assert isinstance(declared, Exempt) and declared.reason
    else:
        assert isinstance(declared, Rule)
        assert declared.before is not None or declared.after is not None


#: What asking the authorizer looks like in a handler.
ASKING = frozenset({"access", "allowed", "allowed_somewhere", "may", "may_on_cluster"})


@pytest.mark.parametrize("module", EVERY_API, ids=_name)
def test_no_handler_asks_the_authorizer_itself(module: ModuleType) -> None:
    """The dispatch applies the declared rule; a check inside a handler would be a second,
    undeclared one."""
    tree = ast.parse(inspect.getsource(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in (
            "handle",
            "answer_now",
            "answer_parked",
        ):
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            used |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            assert not used & ASKING, (node.name, sorted(used & ASKING))


def test_the_registered_specs_carry_the_modules_rules() -> None:
    registry = builtin_registry()
    for module in GROUP_APIS:
        registry.register(module)
    assert {spec.api_key for spec in registry} == {m.API_KEY for m in EVERY_API}
    for spec in registry:
        assert isinstance(spec.authorization, Rule | Exempt), spec.name


def test_guard_refuses_an_api_that_declares_nothing(tmp_path: Path) -> None:
    registry = builtin_registry()

    async def handle(request: object, version: int, ctx: object) -> None:
        return None

    registry.register(ApiSpec(ApiKey.LIST_GROUPS, range(0, 1), handle, "undeclared"))
    access = AccessControl(tmp_path, super_users=frozenset(), allow_if_no_acl=False)
    try:
        with pytest.raises(RegistryError, match="undeclared"):
            guard(registry, access)
    finally:
        access.close()


def test_guard_wraps_ruled_apis_and_leaves_exempt_ones(tmp_path: Path) -> None:
    registry = builtin_registry()
    before = {spec.api_key: spec.handle for spec in registry}
    access = AccessControl(tmp_path, super_users=frozenset(), allow_if_no_acl=False)
    try:
        guard(registry, access)
    finally:
        access.close()
    for spec in registry:
        wrapped = spec.handle is not before[spec.api_key]
        assert wrapped == isinstance(spec.authorization, Rule), spec.name
