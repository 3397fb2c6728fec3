"""What each API asks the authorizer before it answers, and Kafka's answer when it is denied.

Every API module declares its rule beside its handler, `AUTHORIZATION = Rule(before, after)` or
`Exempt(reason)`; when the node has an authorizer (`coordinator.node.access_control`),
`guard(registry, access)` wraps each registered handler in its rule, and refuses an API that
declares neither. Without an authorizer nothing is checked, as on Kafka. The checks and error
codes follow Kafka's KafkaApis (each module's rule says which); the client-balance extension APIs
(ours) follow the Kafka APIs they stand beside.

`guard` holds the rule types and the wrapping, `checks` the building blocks rules are made of,
`operations` the authorized-operations fields (KIP-430).

May import: `coordinator.node.contract`, `coordinator.node.access_control`, `coordinator.wire`
(never an API module: they import this).
"""

from coordinator.node.authorization.guard import Exempt, Narrowed, Rule, guard

__all__ = ["Exempt", "Narrowed", "Rule", "guard"]
