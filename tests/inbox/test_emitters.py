"""The table of known emitters (``inbox.agui.emitters``): each integration recognised from what it really sends
(the interrupts below are as its adapter builds them), the payload its resume code reads, and the page a question
gets: its words first, one answer field, no Approve / Deny."""

from __future__ import annotations

import json

import pytest

from inbox.agui import emitters
from inbox.agui.emitters import APPROVAL, QUESTION, Interrupt
from inbox.decisions.rules import DecisionError, default_schema_for
from inbox.decisions.services import decision_submit
from inbox.decisions.shapes import bulk_payload, needs_form_input, shape_of
from inbox.models import InboxItem
from tests.factories import InboxItemFactory

# As ag-ui-claude-sdk 0.2.3 builds it (RecoveryRun.interrupts): the id is the toolCallId, no message, no schema.
CLAUDE_SDK = Interrupt(
    reason="tool_approval",
    tool_call_id="toolu_01",
    metadata={"source": "claude-sdk-deferred", "toolName": "mcp__mail__send_email", "input": {"to": "bob"}},
)
# As ag-ui-strands 1.0.2 maps a tool's own tool_context.interrupt(name, reason=…): reason = the name.
STRANDS_QUESTION = Interrupt(reason="ask_human", metadata={"reason": {"question": "Which colour?"}})
STRANDS_STRING = Interrupt(reason="colour", metadata={"reason": "Which colour should the button be?"})
STRANDS_YES_NO = Interrupt(reason="inbox:budget", metadata={"reason": {"message": "Approve a budget of 500?"}})
# As ag-ui-crewai 1.0.0 builds a @human_feedback pause; with emit=[…] it carries a string enum.
CREWAI = Interrupt(
    reason="crewai:human_feedback",
    message="Approve this outline?",
    metadata={"crewai": {"flowId": "t-1", "methodName": "outline", "emit": None, "output": "1. Intro"}},
)
CREWAI_EMIT = Interrupt(
    reason="crewai:human_feedback",
    message="Ship it?",
    response_schema={"type": "string", "enum": ["approved", "rejected"]},
    metadata={"crewai": {"flowId": "t-1", "methodName": "draft", "emit": ["approved", "rejected"], "output": ""}},
)


@pytest.mark.parametrize(
    ("interrupt", "key", "asks", "question", "answer"),
    [
        (CLAUDE_SDK, "claude-sdk", APPROVAL, "Allow mcp__mail__send_email?", None),
        (STRANDS_QUESTION, "strands-interrupt", QUESTION, "Which colour?", "blue"),
        (STRANDS_STRING, "strands-interrupt", QUESTION, "Which colour should the button be?", "blue"),
        (STRANDS_YES_NO, "strands-interrupt", APPROVAL, "Approve a budget of 500?", "blue"),
        (CREWAI, "crewai-feedback", QUESTION, "Approve this outline?", "blue"),
        (CREWAI_EMIT, "crewai-feedback", APPROVAL, "Ship it?", "blue"),
    ],
)
def test_each_emitter_is_recognised_from_what_it_sends(interrupt, key, asks, question, answer):
    emitter = emitters.emitter_of(interrupt)
    assert emitter is not None and emitter.key == key
    assert emitter.asks(interrupt) == asks
    assert emitters.asks_for_input(interrupt) is (asks == QUESTION)
    assert emitters.question_of(interrupt) == question
    if answer is not None:
        assert emitters.answer_payload(interrupt, answer) == answer  # the words, as the resume code reads them


@pytest.mark.parametrize(
    "interrupt",
    [
        Interrupt(reason="tool_call", tool_call_id="tc-1"),
        Interrupt(reason="tool_approval", tool_call_id="tc-1", metadata={"source": "somewhere-else"}),
        # A schema of its own wins: not recognised as Claude SDK's even with its metadata.
        Interrupt(reason="tool_approval", response_schema={"type": "boolean"}, metadata=CLAUDE_SDK.metadata),
        # Strands' shape is exactly {"reason": …} with no message: another key or a message is someone else.
        Interrupt(reason="ask_human", metadata={"reason": "Which?", "other": 1}),
        Interrupt(reason="ask_human", message="Which?", metadata={"reason": "Which?"}),
        Interrupt(reason="confirmation", metadata={"reason": "Which?"}),
        Interrupt(reason="crewai:human_feedback", metadata={"flow": "x"}),
    ],
)
def test_what_no_row_recognises(interrupt):
    assert emitters.emitter_of(interrupt) is None


def test_the_schema_claude_sdk_reads_and_the_buttons_it_gives():
    schema = emitters.implied_schema(CLAUDE_SDK)
    assert schema == emitters.CLAUDE_SDK_SCHEMA and schema["required"] == ["behavior"]
    item = InboxItemFactory.build(
        reason=CLAUDE_SDK.reason, tool_call_id=CLAUDE_SDK.tool_call_id, metadata=CLAUDE_SDK.metadata, message=""
    )
    shape = shape_of(item)
    assert shape is not None
    assert (shape.payload(True), shape.payload(False)) == ({"behavior": "allow"}, {"behavior": "deny"})
    assert shape.edit_key == "updatedInput"  # its resume code runs the approved call with updatedInput


def test_questions_have_no_yes_no_and_an_unknown_agent_gets_the_answer_object():
    generic = Interrupt(reason="ask_user", message="Which colour?")
    assert emitters.emitter_of(generic) is None and emitters.asks_for_input(generic)
    assert emitters.answer_payload(generic, "blue") == {"answer": "blue"}
    assert emitters.implied_schema(generic) is None  # nothing said: any JSON is still accepted from the API
    yes_no = Interrupt(reason="ask_user", message="Shall I go on?")
    assert not emitters.asks_for_input(yes_no)
    for interrupt in (STRANDS_QUESTION, CREWAI):
        assert emitters.implied_schema(interrupt) == emitters.TEXT_SCHEMA
        item = InboxItemFactory.build(reason=interrupt.reason, message=interrupt.message, metadata=interrupt.metadata)
        assert needs_form_input(item) and bulk_payload(item, "approve") is None
    item = InboxItemFactory.build(reason="inbox:budget", message="", metadata=STRANDS_YES_NO.metadata)
    assert default_schema_for(item) is None and bulk_payload(item, "approve") == ("resolved", {"approved": True})


@pytest.mark.django_db
def test_approved_is_refused_as_the_answer_to_a_strands_question(alice, agent):
    item = InboxItemFactory(run__agent=agent.agent, reason="ask_human", message="", metadata=STRANDS_QUESTION.metadata)
    with pytest.raises(DecisionError) as refused:
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    assert (refused.value.status, refused.value.code) == (400, "invalid_payload")
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload="blue")
    item.refresh_from_db()
    assert item.response_payload == "blue"


@pytest.mark.django_db
def test_a_claude_sdk_approval_takes_behavior_not_approved(alice, agent):
    item = InboxItemFactory(
        run__agent=agent.agent,
        reason="tool_approval",
        tool_call_id="toolu_01",
        interrupt_id="toolu_01",
        message="",
        metadata=CLAUDE_SDK.metadata,
    )
    with pytest.raises(DecisionError) as refused:
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    assert (refused.value.status, refused.value.code) == (400, "invalid_payload")
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"behavior": "allow"})
    item.refresh_from_db()
    assert item.outcome == InboxItem.Outcome.APPROVED


@pytest.mark.django_db
def test_a_strands_question_page_leads_with_its_question_and_an_answer_field(client, alice, agent):
    """Strands sends no message: the question is in ``metadata.reason``. The page's heading is the question, the
    decision card one answer field under it, no Approve / Deny; the answer goes as the bare text."""
    item = InboxItemFactory(run__agent=agent.agent, reason="ask_human", message="", metadata=STRANDS_QUESTION.metadata)
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    heading = page[page.index('id="item-heading"') :].split("</h1>", 1)[0]
    assert heading.endswith(">Which colour?")
    form = page[page.index("data-decision-form") :].split("</form>", 1)[0]
    assert "data-question>Which colour?</p>" in form
    assert form.index("data-question") < form.index('name="answer_text"') < form.index('data-action="text"')
    assert 'data-action="approve"' not in form and 'data-action="deny"' not in form
    assert "Sent to the agent as <code>&quot;…&quot;</code>" in form
    row = client.get("/inbox/").content.decode().split("data-item-row", 1)[1].split("</tr>", 1)[0]
    assert ">Which colour?</a>" in row  # the list leads with it too
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "text", "answer_text": " Blue, please. "})
    item.refresh_from_db()
    assert (item.status, item.response_payload) == ("resolved", "Blue, please.")


@pytest.mark.django_db
def test_a_claude_sdk_page_sends_behavior(client, alice, agent):
    item = InboxItemFactory(
        run__agent=agent.agent,
        reason="tool_approval",
        tool_call_id="toolu_01",
        interrupt_id="toolu_01",
        message="",
        metadata=CLAUDE_SDK.metadata,
    )
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert "Approve sends <code>{&quot;behavior&quot;: &quot;allow&quot;}</code>" in page
    assert "data-text-answer" not in page  # an approval: no answer in words that its resume code would refuse
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"})
    item.refresh_from_db()
    assert (item.response_payload, item.outcome) == ({"behavior": "deny"}, InboxItem.Outcome.DENIED)
    assert json.dumps(item.response_payload) == '{"behavior": "deny"}'


@pytest.mark.django_db
def test_a_string_schema_is_a_question_answered_with_the_words_themselves(client, alice, agent):
    """ag2's ``context.input()``: ``input_required`` with ``{"type": "string"}``. One answer field, not a JSON
    editor where the words would need quotes; the payload is the string."""
    item = InboxItemFactory(
        run__agent=agent.agent,
        reason="input_required",
        message="Approve a budget of 500? (yes/no)",
        response_schema={"type": "string"},
    )
    client.force_login(alice)
    form = client.get(item.get_absolute_url()).content.decode()
    form = form[form.index("data-decision-form") :].split("</form>", 1)[0]
    assert "data-question>Approve a budget of 500? (yes/no)</p>" in form and "data-json-answer" not in form
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "text", "answer_text": "yes"})
    item.refresh_from_db()
    assert (item.status, item.response_payload) == ("resolved", "yes")
