"""Bytes on the wire: the kio codec, generated encoders, message schemas, a minimal client;
`transport/` (sockets, listeners, quotas) and `security/` (TLS, SASL, SCRAM, ACLs, sessions).

May import: the root modules (`coordinator.errors`) only: it is the bottom rung.
"""
