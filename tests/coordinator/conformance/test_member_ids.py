"""The KIP-848 member ids of a differential run (`coordinator.conformance.member_ids`): a Java
`HashMap`, what Kafka's uniform assignor iterates, visits them in the model's member order
(static c2 first, then c0, c1 by member id), whatever order they were put in. Asked of a JVM."""

from __future__ import annotations

import subprocess
from pathlib import Path

from assignors.spec import member_order_key
from coordinator.conformance.member_ids import consumer_member_ids
from coordinator.conformance.steps import instance_of
from coordinator.testing.peers.kafka_broker import java_command

#: Each argument is one group's ids, comma-separated: put in reverse, printed in visit order.
ORDER = """
import java.util.*;
public class Order {
    public static void main(String[] groups) {
        for (String group : groups) {
            String[] ids = group.split(",");
            Map<String, Integer> members = new HashMap<>();
            for (int i = ids.length - 1; i >= 0; i--) members.put(ids[i], i);
            System.out.println(String.join(",", members.keySet()));
        }
    }
}
"""


def test_a_java_hash_map_visits_the_ids_in_the_models_member_order(tmp_path: Path) -> None:
    source = tmp_path / "Order.java"
    source.write_text(ORDER)
    chosen = [consumer_member_ids(f"differential-{n}") for n in range(20)]
    models = []
    for ids in chosen:
        models.append(sorted(ids, key=lambda s: member_order_key(ids[s], instance_of(s))))
        assert models[-1] == ["c2", "c0", "c1"]
    args = [",".join(ids.values()) for ids in chosen]
    run = subprocess.run(
        [java_command(), str(source), *args], capture_output=True, text=True, check=True
    )
    for ids, model, line in zip(chosen, models, run.stdout.split(), strict=True):
        by_id = {member_id: slot for slot, member_id in ids.items()}
        assert [by_id[m] for m in line.split(",")] == model
