"""`rebalance demo` and `rebalance walkthrough`: the stories and their shared helpers.

May import: every folder but `coordinator.cli`.
"""
