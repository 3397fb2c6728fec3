"""Conformance of any Kafka-compatible broker's group coordinator with Kafka's rules.

`rebalance conformance --bootstrap HOST:PORT` runs wire scenarios against a broker:
each names the rule it checks (a section of the group protocol spec, Kafka's behaviour and the
request versions it applies to) and the settings it assumes. Settings are read from the broker's
DescribeConfigs where it has it, else taken from `--assume KEY=VALUE`; a scenario whose
assumption cannot hold is skipped with the reason. Results go to a terminal table, JSON and
JUnit XML (`output`), and the exit status is 1 on any failure.

* `broker`     the broker under test: versions it advertises, its settings, member connections;
* `scenario`   what a scenario is: its metadata, the registry, the `Context` it runs in;
  `assumptions` the conditions on the broker's settings and versions it may need;
* `classic_scenarios` the classic rules, one async function each, registered with their
  metadata; `timer_scenarios` the classic ones a timer decides, `consumer_scenarios` KIP-848's,
  `differential_scenarios` the differential runs (below);
* `runner`     runs them (each in a group of its own), with timeouts and skips;
* `output`     the table, JSON and JUnit XML;

and the differential run (scenario `differential.lockstep`, needs Hypothesis):

* `steps`        its vocabulary: one client action per step, one line of text each;
* `model_side`   the pure core as the model, on a clock that stands still;
* `broker_side`  the same commands over the wire, the answers read back as the core's replies;
* `side_view`    what each side has told the run (member ids by name, generations, epochs);
* `step_requests` a step as the command one side is sent, built from that side's view;
* `answers`      a reply of either side as the fields that must agree;
* `lockstep`     one run: each step to both sides, answers normalised and compared;
* `member_ids`   the KIP-848 member ids, in the same assignor order on both sides;
* `broker_probes` what the broker is asked before the runs (topic known, regexes at once);
* `differential_session` what the runs share (broker, loop, connections) and their report;
* `differential_rules` the steps Hypothesis may draw next, a state machine per run;
* `differential` Hypothesis drives and shrinks runs; `replay` runs printed steps again.

May import: the folders under it on the ladder (`coordinator.clients`, `groups`, `node`,
`partition_log`, `wire`); it speaks to a broker over `coordinator.wire` only.
"""
