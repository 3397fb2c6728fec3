"""The assignor worker: a child process that computes large consumer groups' target assignments.

A thread does not take a 1M-partition assignment off the loop: it shares the interpreter lock,
and one C-level step of the assignor (a sort, a big container build) holds it throughout, so
heartbeats of every other group wait behind it (`benchmarks/bench_consumer_group_stall.py`,
RESULTS.md). A process shares nothing, but whatever it is sent must be pickled; sending a
group's million partitions at every epoch would cost as much as computing. So the child keeps
a copy of each big group's inputs, and every computation sends only what changed since the last
one. The loop only queues a computation and applies its result; the rest is two threads' work,
each in steps of a few milliseconds:

* `parent`: `AssignorWorker`, the runtime's handle; its sending thread diffs a group's inputs
  against its `mirror` of what the child holds and sends the difference, its receiving thread
  assembles each result and names its targets (`named_forms`);
* `child`: the process's loop, running the same `compute_target` as the inline path on its copy
  and sending back only the changed members' targets, their records already encoded;
* `messages`: what passes between them, one named tuple per kind, framed and cut in chunks.

The result is then handed to the core (`GroupCoordinatorCore.target_computed`) exactly as a
thread's would be: recorded in the group's order, applied only if its group epoch is still the
group's (a newer epoch supersedes it, and the core starts the next computation). If the worker
dies, its computations in flight are reported failed (the core computes again, from the current
group) and the next one starts a new worker, which is sent every group whole again.

Priming: the first computation after a load would pickle the whole group and
name every member's target while heartbeats wait on the interpreter lock in small
steps. So the runtime primes the worker with each big group as soon as the node has loaded it
(`AssignorWorker.prime`): the same deltas, sent paced (`parent.PACE_S` between frames), then
`messages.Prime`: the child runs `uniform` once over its copy so that the next epoch is
incremental there as well, and echoes it, on which the receiving thread makes the named forms,
paced too (`priming` counts until then). A computation requested meanwhile queues behind the
priming on the same sending thread and sends only what changed since, so its result is the
same; the first epoch after a load is then an ordinary one. Any delta of more than one frame is
paced the same way (a group that grows past the offload threshold, a new worker after one
died), so the loop is not held long by one whole-group send either.
"""

from coordinator.groups.assignor_worker.parent import AssignorWorker, Done, Precoded

__all__ = ["AssignorWorker", "Done", "Precoded"]
