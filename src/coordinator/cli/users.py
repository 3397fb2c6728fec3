"""`rebalance users add/remove/list`: the SASL users of a data dir (what Kafka does with
`kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type users`).

    rebalance users add alice --data-dir ./data --password s3cret   # SCRAM-SHA-256 and -512
    rebalance users add bob --data-dir ./data --mechanism SCRAM-SHA-512 < password.txt
    rebalance users list --data-dir ./data
    rebalance users remove alice --data-dir ./data

Credentials are salted (`coordinator.wire.security.scram`) and written to
`DATA_DIR/credentials.sqlite` (`coordinator.wire.security.credentials`); a running server sees a
change at the next login. Without
`--password` the password is the first line of standard input, so it need not appear in the
process list.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from coordinator.command_line import add_debug_argument
from coordinator.errors import OperationalError, UsageError
from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.scram import MECHANISMS, MIN_ITERATIONS


def add_users_arguments(commands: argparse._SubParsersAction[Any]) -> None:
    users = commands.add_parser(
        "users", help="add, remove and list the SASL users (SCRAM credentials) of a data dir"
    )
    actions = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="create or replace a user's credentials")
    add.add_argument("user", metavar="NAME", help="the user's name, as clients log in with it")
    add.add_argument("--password", help="the password (default: the first line of standard input)")
    add.add_argument(
        "--iterations", type=int, default=MIN_ITERATIONS,
        help=f"PBKDF2 iterations (at least and default {MIN_ITERATIONS})",
    )  # fmt: skip
    remove = actions.add_parser("remove", help="delete a user's credentials")
    remove.add_argument("user", metavar="NAME", help="the user whose credentials go")
    listing = actions.add_parser("list", help="every user with its mechanisms")
    for action in (add, remove):
        action.add_argument(
            "--mechanism", action="append", choices=sorted(MECHANISMS), default=None,
            help="only this mechanism (repeatable; default: both)",
        )  # fmt: skip
    for action in (add, remove, listing):
        action.add_argument(
            "--data-dir", type=Path, required=True, metavar="DIR",
            help="the server's data dir (its credentials live there; the server may be running)",
        )  # fmt: skip
        add_debug_argument(action)


def run_users(args: argparse.Namespace) -> int:
    directory: Path = args.data_dir
    if not directory.is_dir():
        if args.users_command != "add" or not directory.parent.is_dir():
            raise OperationalError(f"{directory} is not a data dir")
        directory.mkdir()
    store = CredentialStore(directory)
    try:
        if args.users_command == "add":
            return _add(store, args)
        if args.users_command == "remove":
            return _remove(store, args)
        return _list(store)
    finally:
        store.close()


def _add(store: CredentialStore, args: argparse.Namespace) -> int:
    password = args.password if args.password is not None else sys.stdin.readline().rstrip("\n")
    if not password:
        raise UsageError("the password is empty (give --password or a line on standard input)")
    if args.iterations < MIN_ITERATIONS:
        raise UsageError(f"--iterations must be at least {MIN_ITERATIONS}")
    mechanisms = args.mechanism or sorted(MECHANISMS)
    try:
        store.add(args.user, password, mechanisms, iterations=args.iterations)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"user {args.user}: {', '.join(mechanisms)} ({args.iterations} iterations)")
    return 0


def _remove(store: CredentialStore, args: argparse.Namespace) -> int:
    mechanisms = args.mechanism or sorted(MECHANISMS)
    if store.remove(args.user, mechanisms) == 0:
        raise OperationalError(f"user {args.user} has no {' or '.join(mechanisms)} credentials")
    print(f"user {args.user}: removed {', '.join(mechanisms)}")
    return 0


def _list(store: CredentialStore) -> int:
    by_user: dict[str, list[str]] = defaultdict(list)
    for user, mechanism, iterations in store.users():
        by_user[user].append(f"{mechanism}=iterations={iterations}")
    for user, credentials in by_user.items():
        print(f"{user}: {', '.join(credentials)}")
    return 0
