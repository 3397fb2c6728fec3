"""Client libraries that talk to a coordinator: `member/` (a group member) and `client_balance/`.

May import: `coordinator.wire` and what is below it (no node, no demos).
"""
