"""The node around the core, in folders that form a ladder (each imports only those below it):
`wire` (bytes) <- `partition_log` <- `node` (a running broker) <- `groups` (the group coordinator)
<- `clients` <- `zookeeper`, `conformance`, `analytics` <- `testing` <- `demo` <- `cli`.
`errors` and `command_line` (how every layer fails) stand under all of them
(`tests/test_layering.py` holds the rule).

Importing this package first loads kio's phantom types with Hypothesis hidden. kio registers a
Hypothesis strategy for each of its phantom types whenever Hypothesis can be imported, which
pulls in Hypothesis itself, with its memory and start-up time in every serving node (RESULTS.md:
figures behind the code), for
strategies nothing here draws from. Hypothesis stays
importable afterwards (the conformance run and the tests use it); only kio's types go without
registered strategies.
"""

import sys


def _load_kio_without_hypothesis() -> None:
    if "kio.static._phantom" in sys.modules or "hypothesis" in sys.modules:
        return  # too late, or Hypothesis is in use already: leave kio as it is
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # `import hypothesis` fails
    try:
        import kio.static._phantom  # noqa: F401
    finally:
        del sys.modules["hypothesis"]


_load_kio_without_hypothesis()
