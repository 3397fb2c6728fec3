"""`rebalance demo` and `rebalance walkthrough`: the stories and their shared helpers.

May import every layer below it: clients, zookeeper, analytics, groups, node, wire, testing.
"""
