"""The receiving thread's named forms: a group's whole target by topic name, as
`compute_target` gives it (every member, in id order), where a member's form is made again only
when its assignment is another object than the one it was made from."""

from __future__ import annotations

from coordinator.groups.assignor_worker.named_forms import NamedForms
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment
from rebalance.consumer_group.target import TargetInputs, compute_target
from rebalance.topics import TopicInfo, TopicMetadata

METADATA = TopicMetadata.of([TopicInfo("t", "id-t", 6), TopicInfo("u", "id-u", 2)])
MEMBERS = tuple(MemberInputs(m, ("t", "u"), None, None, None) for m in ("c", "a", "b"))


def test_the_named_target_is_the_inline_one_and_made_once_per_assignment() -> None:
    first = TargetInputs("g", 1, "range", METADATA, MEMBERS, {})
    inline = compute_target(first)
    forms = NamedForms()
    named = forms.by_name(first, dict(inline.changed), pause_s=0.001)
    assert {m: list(n) for m, n in named.items()} == inline.by_name
    assert list(named) == ["a", "b", "c"]
    kept = dict(named)
    # the next epoch: only b's target is another object; a and c keep their named forms
    targets = dict(inline.changed)
    moved: Assignment = (("id-t", (0,)),)
    second = TargetInputs("g", 2, "range", METADATA, MEMBERS, targets)
    again = forms.by_name(second, {"b": moved})
    assert again["a"] is kept["a"] and again["c"] is kept["c"]
    assert again["b"] == (("t", (0,)),)
    assert forms.made_from("g")["b"] is moved


def test_a_forgotten_group_is_made_again() -> None:
    inputs = TargetInputs("g", 1, "range", METADATA, MEMBERS, {})
    changed = dict(compute_target(inputs).changed)
    forms = NamedForms()
    before = forms.by_name(inputs, changed)
    forms.forget("g")
    assert forms.made_from("g") == {}
    after = forms.by_name(inputs, changed)
    assert after == before and after["a"] is not before["a"]
