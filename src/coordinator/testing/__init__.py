"""Test support shipped in the package: servers in-process, the pytest plugins, certificates,
node processes (`client_balance_node`; `cluster_nodes`: `rebalance serve --cluster` nodes).

May import: every folder but `coordinator.demo` and `coordinator.cli`.
"""
