"""The consumer group type: KIP-848's coordinator-driven, incremental protocol (spec §7).

Seed 001's design made real: members register and ping with one heartbeat, the coordinator
computes the assignment and tells each member what to stop and what to start, one member at a
time, without a global barrier.

* `commands`    the ConsumerGroupHeartbeat and ConsumerGroupDescribe commands; `replies`
                their answers; `timers` the session, revocation and classic members' keys;
* `records`     the durable state, one keyed record per fact, replayed on load;
* `group`       group and member data, the topic metadata snapshot, the partition owners;
* `validation`  Kafka's request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, ...);
* `target`      the target assignment of a group epoch, by a server assignor;
* `reconcile`   one member's next step: revoke before assign, never two owners;
* `membership`  the group and member a heartbeat names: join, epoch checks, static replacement;
* `departure`   leaves and fencing, and the timers that fence (session, rebalance timeout);
* `epochs`      group epoch bumps, the target assignment, one member's reconciliation step;
* `replay`      writing a record and replaying it, the tombstones of a deleted group;
* `heartbeat`   one ConsumerGroupHeartbeat from validation to reply, in Kafka's order;
* `offsets`     who may commit and fetch, the topics the members consume;
* `routes`      the core's dispatch, and the classic requests naming a consumer group;
* `group_type`  `ConsumerGroupType`, what the core sees: heartbeats, timers, replay, views.
"""
