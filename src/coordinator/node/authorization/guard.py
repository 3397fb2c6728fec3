"""The rule an API module declares (`AUTHORIZATION`), and `guard`, which wraps each handler in it.

A `Rule` asks the authorizer before the handler (`before`: an answer of its own, a `Narrowed`
request, or None to go on) and may rewrite the handler's answer (`after`). `Exempt` says, with a
reason, that an API asks nothing here (answered before authentication, or it checks inside).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator.node.access_control import AccessControl
from coordinator.node.contract import (
    ApiRegistry,
    ApiSpec,
    RegistryError,
    RequestContext,
    ResponseValue,
)


@dataclass(frozen=True)
class Narrowed:
    """Only part of the request is allowed: hand `request` to the handler, then `merge` the
    denied part into its answer (a version-agnostic dict)."""

    request: Any
    merge: Callable[[dict[str, Any]], dict[str, Any]]


Before = Callable[[Any, int, RequestContext, AccessControl], "ResponseValue | Narrowed"]
After = Callable[[Any, int, RequestContext, AccessControl, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Rule:
    before: Before | None = None
    after: After | None = None


@dataclass(frozen=True)
class Exempt:
    """The API asks the authorizer nothing here, for `reason`."""

    reason: str


def guard(registry: ApiRegistry, access: AccessControl) -> None:
    """Wrap every registered API in its rule; an API that declares neither a `Rule` nor `Exempt`
    is refused (RegistryError) rather than left open."""
    for spec in list(registry):
        rule = spec.authorization
        if isinstance(rule, Rule):
            registry.register(_guarded(spec, rule, access), replace=True)
        elif not isinstance(rule, Exempt):
            raise RegistryError(
                f"api {spec.api_key} ({spec.name}) declares no AUTHORIZATION rule or Exempt"
            )


def _guarded(spec: ApiSpec, rule: Rule, access: AccessControl) -> ApiSpec:
    def check(request: Any, version: int, ctx: RequestContext) -> ResponseValue | Narrowed:
        return None if rule.before is None else rule.before(request, version, ctx, access)

    def finish(
        request: Any, version: int, ctx: RequestContext, value: ResponseValue, narrowed: Any
    ) -> ResponseValue:
        if isinstance(narrowed, Narrowed) and isinstance(value, dict):
            value = narrowed.merge(value)
        if rule.after is not None and isinstance(value, dict):
            value = rule.after(request, version, ctx, access, value)
        return value

    async def handle(request: Any, version: int, ctx: RequestContext) -> ResponseValue:
        verdict = check(request, version, ctx)
        if verdict is not None and not isinstance(verdict, Narrowed):
            return verdict
        asked = verdict.request if isinstance(verdict, Narrowed) else request
        value = await spec.handle(asked, version, ctx)
        return finish(request, version, ctx, value, verdict)

    answer_now = None
    if spec.answer_now is not None:
        immediate = spec.answer_now

        def answer_now(request: Any, version: int, ctx: RequestContext) -> ResponseValue:
            verdict = check(request, version, ctx)
            if verdict is not None and not isinstance(verdict, Narrowed):
                return verdict
            asked = verdict.request if isinstance(verdict, Narrowed) else request
            value = immediate(asked, version, ctx)
            return None if value is None else finish(request, version, ctx, value, verdict)

    answer_parked = None
    if spec.answer_parked is not None:
        park = spec.answer_parked

        def answer_parked(
            request: Any, version: int, ctx: RequestContext, answer: Callable[[ResponseValue], None]
        ) -> None:
            verdict = check(request, version, ctx)
            if verdict is not None and not isinstance(verdict, Narrowed):
                answer(verdict)
                return
            asked = verdict.request if isinstance(verdict, Narrowed) else request

            def answered(value: ResponseValue) -> None:
                answer(finish(request, version, ctx, value, verdict))

            park(asked, version, ctx, answered)

    return dataclasses.replace(
        spec, handle=handle, answer_now=answer_now, answer_parked=answer_parked
    )
