"""AlterUserScramCredentials (key 51, v0): delete users' SCRAM credentials and create or
replace others from the SaltedPassword the client computed (the password never travels).

Validated as Kafka's controller does (`ScramControlManager.alterCredentials`): a user may be
altered once per request (a second deletion or upsertion of the same user makes that user
DUPLICATE_RESOURCE, and none of its changes apply); an empty name is UNACCEPTABLE_CREDENTIAL, a
mechanism other than SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM, iterations outside
4096-16384 UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
RESOURCE_NOT_FOUND. The accepted changes are written in one transaction and fsync'd before the
answer; the next authentication uses them (a session already authenticated keeps its
principal until it re-authenticates, as on Kafka). Needs ALTER on the cluster when the node has
an authorizer (`coordinator.node.authorization`). Kafka answers deletions first, then
upsertions, then the refused users; so does this.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MIN_ITERATIONS,
    ScramCredential,
    credential_of_salted,
)

API_KEY = 51
VERSIONS = range(0, 1)

_TWICE = "A user credential cannot be altered twice in the same request"
#: One request's check and write at a time, so that what it validated against is what it changes.
_ALTERING = threading.Lock()


@dataclass
class Alteration:
    """What one request changes: accepted deletions and upsertions by user, refusals by user."""

    deletions: dict[str, str] = field(default_factory=dict)
    upsertions: dict[str, tuple[str, ScramCredential]] = field(default_factory=dict)
    refused: dict[str, tuple[ErrorCode, str]] = field(default_factory=dict)

    def results(self) -> list[dict[str, Any]]:
        accepted = [*self.deletions, *self.upsertions]
        return [
            *({"user": u, "error_code": ErrorCode.none, "error_message": None} for u in accepted),
            *(
                {"user": u, "error_code": code, "error_message": message}
                for u, (code, message) in self.refused.items()
            ),
        ]


def _name_and_mechanism(name: str, code: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if code not in MECHANISM_CODES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def plan(request: Any, exists: set[tuple[str, str]]) -> Alteration:
    """Kafka's validation of the request against the credentials that `exists`."""
    change = Alteration()
    for deletion in request.deletions:
        user = deletion.name
        if user in change.refused:
            continue
        if change.deletions.pop(user, None) is not None:
            change.refused[user] = ErrorCode.duplicate_resource, _TWICE
            continue
        error = _name_and_mechanism(user, int(deletion.mechanism))
        mechanism = MECHANISM_CODES.get(int(deletion.mechanism), "")
        if error is None and (user, mechanism) not in exists:
            error = (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        if error is not None:
            change.refused[user] = error
        else:
            change.deletions[user] = mechanism
    for upsertion in request.upsertions:
        user = upsertion.name
        if user in change.refused:
            continue
        if (
            change.deletions.pop(user, None) is not None
            or change.upsertions.pop(user, None) is not None
        ):
            change.refused[user] = ErrorCode.duplicate_resource, _TWICE
            continue
        error = _name_and_mechanism(user, int(upsertion.mechanism))
        iterations = int(upsertion.iterations)
        if error is None and iterations < MIN_ITERATIONS:
            error = ErrorCode.unacceptable_credential, "Too few iterations"
        elif error is None and iterations > MAX_ITERATIONS:
            error = ErrorCode.unacceptable_credential, "Too many iterations"
        if error is not None:
            change.refused[user] = error
            continue
        mechanism = MECHANISM_CODES[int(upsertion.mechanism)]
        credential = credential_of_salted(
            mechanism, bytes(upsertion.salted_password), bytes(upsertion.salt), iterations
        )
        change.upsertions[user] = mechanism, credential
    return change


def _apply(data_dir: Path, request: Any) -> Alteration:
    with _ALTERING:
        return _validated_and_written(data_dir, request)


def _validated_and_written(data_dir: Path, request: Any) -> Alteration:
    store = CredentialStore(data_dir)
    try:
        exists = {(user, mechanism) for user, mechanism, _ in store.users()}
        change = plan(request, exists)
        store.alter(
            change.deletions.items(),
            [(user, mechanism, c) for user, (mechanism, c) in change.upsertions.items()],
        )
        return change
    finally:
        store.close()


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    change = await asyncio.to_thread(_apply, ctx.broker.data_dir, request)
    return {"throttle_time": 0, "results": change.results()}
