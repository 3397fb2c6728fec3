"""Rebalance analytics on Spark: explain a group's rebalances from the coordinator's event log.

`load` reads and validates the log (bad lines are quarantined, never dropped), `episodes` cuts it
into rebalance episodes, `metrics` summarises each group, `report` writes the HTML page and its
plots, `sweep` compares assignors over a grid of scenarios, and `cli` holds the entry points that
the `rebalance` console script wires in. Everything is a Spark job that runs the same in
`local[*]` and on a cluster: only small aggregated tables are ever collected to the driver.

May import: the folders under it on the ladder (`coordinator.clients`, `groups`, `node`,
`partition_log`, `wire`) and the root modules; it uses only `coordinator.command_line`.
"""
