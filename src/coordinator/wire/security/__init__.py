"""Who the client is: TLS, SASL and SCRAM, stored credentials, ACLs, the connection's session.

May import: `coordinator.wire` and `coordinator.errors`.
"""
