"""The group-coordinator extension: runtime, timer wheel, assignor worker, store, event log, group
APIs.

`extension` plugs the group coordinator into a node (`coordinator.node.app`); `runtime` runs the
pure core (`rebalance`) on the event loop with `timer_wheel` and the `assignor_worker` process;
`store/` and `record_codec` keep its records durable; `event_log/` writes its events; `apis/`
are the group APIs.

May import: `coordinator.node`, `coordinator.partition_log`, `coordinator.wire` and the root
modules.
"""
