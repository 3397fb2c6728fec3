"""A group type defined by the tests alone: "roster" groups, whose members enlist with a
session and commit offsets under the roster's epoch.

It shows what adding a group type takes (`test_group_types.py`): these files and the type's
registration (`GroupCoordinatorCore(group_types=...)`, `rebalance.registry` for a real one),
nothing in the core's shared modules.

* `records`     the durable state: one snapshot of the roster per group;
* `group`       the group and its lifecycle;
* `commands`    the one request (`Enlist`) and its reply;
* `group_type`  `RosterGroupType`, what the core sees: route, timer, offsets, replay, views.
"""
