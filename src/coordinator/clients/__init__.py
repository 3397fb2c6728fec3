"""Client libraries that talk to a coordinator: `member/` (a group member) and `client_balance/`.

May import: the folders under it on the ladder (`coordinator.groups`, `node`, `partition_log`,
`wire`); its libraries use only `coordinator.wire`.
"""
