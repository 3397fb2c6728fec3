"""The client-balance group type: TubeMQ's client-side partition assignment (seed 003, spec §D).

The coordinator inverts its usual job: it assigns nothing. Each consumer ("node") joins with the
group's `source_count` and its own `node_id`, decides itself which partitions it takes (by default
`hashCode(partitionKey) % sourceCount == nodeId`), registers and releases them one by one with an
optional bootstrap offset, and reports what it holds in its heartbeats. The coordinator keeps the
group consistent (one source count, unique node ids, one topic set, one group type) and each
partition exclusive (PARTITION_OCCUPIED while its holder's session is live).

* `records`     the durable state, one keyed record per fact, replayed on load;
* `commands`    the requests as the core sees them (heartbeat with join/leave, register,
                release, describe); `replies` their answers;
* `group`       group and node data, the partition holders;
* `timers`      the node session's timer key;
* `heartbeat`   a node joins, leaves or proves it is alive;
* `partitions`  a partition registered and released, the bootstrap offset;
* `membership`  the node a request comes from, stale nodes removed, nodes leaving;
* `replay`      records written (with their events) and replayed, the group's tombstones;
* `views`       DescribeGroups, ListGroups, ClientBalanceDescribe;
* `offsets`     the commit fence: a node commits what it holds;
* `routes`      the core's dispatch to these, the coordinator-level checks first;
* `group_type`  `ClientBalanceGroupType`, what the core sees of all this.
"""
