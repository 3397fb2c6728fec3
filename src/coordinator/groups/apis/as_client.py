"""The group APIs from the client's side: the core's commands as Kafka requests, and Kafka
responses as the core's replies.

Everything in this project that speaks to a group coordinator as a client does it with the core's
own values: the member library (`coordinator.clients.member`) sends what the pure member decides,
the conformance run (`coordinator.conformance`) sends what it also hands to the core as its model.
Each group API module holds both directions of its API (its server's `to_command`/`to_response`
and its client's `request_values`/`reply_of`, for the command class it declares as `COMMAND`);
this module finds the module by the command. The values are the version-agnostic dicts
`codec.build_request` fills a request class from (a field the version lacks is dropped there),
and a decoded response is read back with a field the version lacks as its default.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Final

from coordinator.groups.apis import GROUP_APIS
from coordinator.groups.apis.common import ErrorReader, strict_error
from coordinator.wire.api_keys import ApiKey
from rebalance.commands import Command

#: The API module carrying each command class a client sends.
BY_COMMAND: Final[dict[type[Any], ModuleType]] = {
    module.COMMAND: module for module in GROUP_APIS if hasattr(module, "COMMAND")
}

__all__ = ["BY_COMMAND", "ErrorReader", "api_key_of", "reply_of", "request_values", "strict_error"]


def _module(command: Command[Any], what: str) -> ModuleType:
    try:
        return BY_COMMAND[type(command)]
    except KeyError:
        raise TypeError(f"no {what} form for {type(command).__name__}") from None


def api_key_of(command: Command[Any]) -> ApiKey:
    """The API that carries `command`."""
    return ApiKey(_module(command, "wire").API_KEY)


def request_values(command: Command[Any], version: int) -> tuple[ApiKey, dict[str, Any]]:
    """The API key of `command` and its fields for `build_request` at `version` of that API."""
    module = _module(command, "wire")
    values: dict[str, Any] = module.request_values(command, version)
    return ApiKey(module.API_KEY), values


def reply_of(command: Command[Any], r: Any, error: ErrorReader = strict_error) -> object:
    """The reply the core gives to `command`, read from the broker's decoded response `r`."""
    reply: object = _module(command, "reply").reply_of(r, error)
    return reply
