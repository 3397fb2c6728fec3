"""Test support shipped in the package: servers in-process, the pytest plugins, certificates,
node processes.

May import every layer below the demos (it runs nodes, groups and clients).
"""
