"""Test support shipped in the package: servers in-process, the pytest plugins, certificates,
node processes.

May import: every folder but `coordinator.demo` and `coordinator.cli`.
"""
