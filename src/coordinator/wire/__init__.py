"""Bytes on the wire: the kio codec, generated encoders, message schemas, a minimal client;
`transport/` (sockets, listeners, quotas) and `security/` (TLS, SASL, SCRAM, ACLs).

May import: nothing of `coordinator` above it (only `coordinator.errors` and the pure packages).
"""
