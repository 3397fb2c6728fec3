"""The coordinator's event log: `log` queues events, `writer` (a process of its own) writes them,
`frames` carries them between the two."""
