"""The `rebalance` command line: `main` wires the subcommands, one module per subcommand.

May import: every folder (it is the top rung).
"""
