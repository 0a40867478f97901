"""The run-wide decision service (the run page's write path): all chosen decisions are stored, or none."""

from __future__ import annotations

import copy

import pytest

from inbox.decisions.rules import DecisionError
from inbox.decisions.services import RunChoice, decision_submit_run
from inbox.models import Decision, InboxItem, Run
from inbox.teams.claims import item_claim
from tests.conftest import spec_example


@pytest.fixture
def parallel(agent, ingest) -> list[InboxItem]:
    response = ingest(agent, copy.deepcopy(spec_example("parallel_interrupts")))
    assert response.status_code == 201
    return list(Run.objects.get(pk=response.json()["id"]).items.order_by("position"))


def test_one_refused_choice_rolls_back_the_others_and_names_its_interrupt(parallel, alice, bob):
    item_claim(item_id=parallel[1].pk, user=bob)
    choices = [RunChoice(parallel[0], "resolved", {"approved": True}), RunChoice(parallel[1], "cancelled")]
    with pytest.raises(DecisionError) as refused:
        decision_submit_run(run=parallel[0].run, user=alice, choices=choices, comment="both")
    assert (refused.value.status, refused.value.code) == (403, "claimed")
    assert refused.value.message.startswith(f"{parallel[1].interrupt_id}: ")
    assert not Decision.objects.exists()
    assert set(InboxItem.objects.values_list("status", flat=True)) == {"open"}


def test_choices_must_belong_to_the_run_and_be_at_least_one(parallel, alice, agent, ingest):
    other = copy.deepcopy(spec_example("minimal_tool_approval"))
    assert ingest(agent, other).status_code == 201
    stranger = InboxItem.objects.exclude(run=parallel[0].run).get()
    run = parallel[0].run
    with pytest.raises(DecisionError) as refused:
        decision_submit_run(run=run, user=alice, choices=[RunChoice(stranger, "cancelled")])
    assert (refused.value.status, refused.value.code) == (400, "not_in_run")
    with pytest.raises(DecisionError) as nothing:
        decision_submit_run(run=run, user=alice, choices=[])
    assert nothing.value.code == "no_choice"
    assert not Decision.objects.exists()


def test_every_choice_is_stored_with_the_comment(parallel, alice):
    choices = [RunChoice(item, "resolved", {"approved": True}) for item in parallel]
    outcomes = decision_submit_run(run=parallel[0].run, user=alice, choices=choices, comment="all good")
    assert [outcome.closed for outcome in outcomes] == [True] * len(parallel)
    assert set(Decision.objects.values_list("comment", flat=True)) == {"all good"}
