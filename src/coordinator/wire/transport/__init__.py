"""Sockets and connections: listening, accepting within quotas, transports, read readiness.

May import: nothing of `coordinator` but `coordinator.errors`.
"""
