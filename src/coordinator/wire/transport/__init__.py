"""Sockets and connections: listening, accepting within quotas, transports, read readiness.

May import: `coordinator.wire` and the root modules.
"""
