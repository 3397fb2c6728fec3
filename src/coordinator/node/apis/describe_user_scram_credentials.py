"""DescribeUserScramCredentials (key 50, v0): the SCRAM mechanisms and iteration counts each
user has credentials for (never the credentials).

As Kafka answers (`ScramImage.describe`): no users named (null or empty) describes every user
with a credential; a user named twice is answered DUPLICATE_RESOURCE once, a user without any
credential RESOURCE_NOT_FOUND. Needs DESCRIBE on the cluster when the node has an authorizer
(`coordinator.node.authorization`). The credentials file is read in a worker thread with its
own connection, so a slow disk never holds the event loop.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.scram import MECHANISM_CODES

API_KEY = 50
VERSIONS = range(0, 1)

_CODE_OF = {name: code for code, name in MECHANISM_CODES.items()}


def _stored(data_dir: Path) -> dict[str, list[tuple[str, int]]]:
    store = CredentialStore(data_dir)
    try:
        by_user: dict[str, list[tuple[str, int]]] = {}
        for user, mechanism, iterations in store.users():
            by_user.setdefault(user, []).append((mechanism, iterations))
        return by_user
    finally:
        store.close()


def describe(asked: list[str] | None, stored: dict[str, list[tuple[str, int]]]) -> list[Any]:
    """The response's results for the users asked (None or empty: every stored user)."""
    if not asked:
        return [_described(user, stored[user]) for user in stored]
    times = Counter(asked)
    results = []
    for user in dict.fromkeys(asked):
        if times[user] > 1:
            message = f"Cannot describe SCRAM credentials for the same user twice: {user}"
            results.append(_error(user, ErrorCode.duplicate_resource, message))
        elif user not in stored:
            message = f"Attempt to describe a user credential that does not exist: {user}"
            results.append(_error(user, ErrorCode.resource_not_found, message))
        else:
            results.append(_described(user, stored[user]))
    return results


def _described(user: str, credentials: list[tuple[str, int]]) -> dict[str, Any]:
    return {
        "user": user,
        "error_code": ErrorCode.none,
        "error_message": None,
        "credential_infos": [
            {"mechanism": _CODE_OF[mechanism], "iterations": iterations}
            for mechanism, iterations in credentials
            if mechanism in _CODE_OF
        ],
    }


def _error(user: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": []}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    asked = None if request.users is None else [u.name for u in request.users]
    stored = await asyncio.to_thread(_stored, ctx.broker.data_dir)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "results": describe(asked, stored),
    }
