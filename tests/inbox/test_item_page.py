"""The item page reads like a page, not a payload: arguments as a field list with the JSON on demand, the edits
of an approval as a field-by-field word diff in the proposal's order (the diff the tool-call trail shows too),
the decision history as sentences, and a form built from the responseSchema whose errors name their own field."""

from __future__ import annotations

import copy
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.core.json_view import MAX_DIFF_PAIRS, args_diff, field_rows, in_key_order, word_segments
from inbox.decisions.forms import form_schema, humanize
from inbox.decisions.rules import validate_payload
from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Run
from tests.conftest import spec_example

# The agent's order (the TOOL_CALL_ARGS text): not alphabetical, and not jsonb's (shorter keys first).
ARGS = {
    "to": "ann@example.com",
    "subject": "Q3 report",
    "body": "Hi Ann,\n\nThe report is final as of noon.\n— Bob",
    "options": {"priority": "high", "cc": ["lead@example.com"]},
    "attachment": None,
}
EDITED = {
    "to": "ann@example.com",
    "subject": "Q3 report (final)",
    "body": "Hi Ann,\n\nThe report is final as of 5pm.\n— Bob",
    "options": {"priority": "high", "cc": ["lead@example.com"]},
    "attachment": None,
}

NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "startDate": {"type": "string", "format": "date"},
        "contact_name": {"type": "string", "title": "Who to call"},
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}, "zip_code": {"type": "string"}},
            "required": ["street", "city"],
        },
    },
    "required": ["startDate", "address"],
}


def proposal_run(thread: str = "t-e", run: str = "r-e") -> dict:
    finished = copy.deepcopy(spec_example("approve_with_edits"))
    finished["threadId"], finished["runId"] = thread, run
    # Any editedArgs: the spec example's lists only to, subject and body.
    finished["outcome"]["interrupts"][0]["responseSchema"]["properties"]["editedArgs"] = {"type": "object"}
    return {
        "events": [
            {"type": "RUN_STARTED", "threadId": thread, "runId": run},
            {"type": "TOOL_CALL_START", "toolCallId": "tc-42", "toolCallName": "sendEmail"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-42", "delta": json.dumps(ARGS)},
            {"type": "TOOL_CALL_END", "toolCallId": "tc-42"},
            finished,
        ]
    }


def interrupt(thread: str, run: str, **fields) -> dict:
    body = {"id": f"{run}-i", "expiresAt": (timezone.now() + timedelta(hours=2)).isoformat(), **fields}
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": [body]},
    }


@pytest.fixture
def post(agent, ingest):
    def posted(body) -> InboxItem:
        response = ingest(agent, body)
        assert response.status_code == 201, response.content
        return Run.objects.get(pk=response.json()["id"]).items.get()

    return posted


def page_of(client, user, item: InboxItem) -> str:
    client.force_login(user)
    response = client.get(item.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def between(page: str, start: str, end: str) -> str:
    return page.split(start, 1)[1].split(end, 1)[0]


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


# --- the diff: one implementation, in the proposal's order ------------------------------------------------


def test_the_diff_follows_the_proposals_key_order_and_puts_new_fields_after_their_siblings():
    lines = args_diff(
        {"to": "a@b.com", "cc": "x@y.z", "opts": {"urgent": False, "tag": "a"}},
        {"to": "a@b.com", "opts": {"urgent": True, "tag": "a", "color": "red"}, "bcc": "boss@b.com"},
    )
    assert [(line.path, line.change) for line in lines] == [
        ("to", "same"),
        ("cc", "removed"),
        ("opts.urgent", "changed"),
        ("opts.tag", "same"),
        ("opts.color", "added"),
        ("bcc", "added"),
    ]
    assert lines[2].segments == [("delete", "false"), ("insert", "true")]


def test_a_change_of_type_is_a_change_even_where_python_calls_the_values_equal():
    lines = args_diff({"count": 1, "code": "7", "flag": 0}, {"count": True, "code": 7, "flag": 0.0})
    assert [line.change for line in lines] == ["changed", "changed", "changed"]
    assert args_diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]})[0].change == "same"


def test_a_value_that_becomes_an_object_shows_both_sides():
    lines = args_diff({"to": "a@b.com"}, {"to": {"name": "Ann", "email": "a@b.com"}})
    assert [(line.path, line.change) for line in lines] == [
        ("to", "removed"),
        ("to.email", "added"),  # keys the proposal lacks come after its own, sorted: the same on every database
        ("to.name", "added"),
    ]


def test_the_words_of_a_changed_text_are_marked_and_a_huge_pair_is_not_compared_word_by_word():
    assert word_segments("final as of noon today", "final as of 5pm today") == [
        ("equal", "final as of "),
        ("delete", "noon"),
        ("insert", "5pm"),
        ("equal", " today"),
    ]
    words = int(MAX_DIFF_PAIRS**0.5)
    before, after = "a " * words, "b " * words
    assert word_segments(before, after) == [("delete", before), ("insert", after)]


def test_the_proposal_order_is_read_from_the_args_text_when_the_stored_value_lost_it():
    stored = {"to": "x", "body": "y", "subject": "z"}  # what jsonb gives back: shorter keys first
    text = json.dumps({"subject": "z", "to": "x", "body": "y"})
    assert list(in_key_order(stored, text, max_depth=64)) == ["subject", "to", "body"]
    # A text that says something else is not trusted for the order.
    assert in_key_order(stored, json.dumps({"subject": "other"}), max_depth=64) is stored
    assert in_key_order(stored, "{not json", max_depth=64) is stored


# --- the field list -----------------------------------------------------------------------------------------


def test_the_field_list_indents_nested_parts_numbers_list_entries_and_keeps_text_as_it_is():
    rows, truncated = field_rows(ARGS, limit=50)
    assert not truncated
    assert [(row.depth, row.label, row.kind, row.text) for row in rows] == [
        (0, "to", "text", "ann@example.com"),
        (0, "subject", "text", "Q3 report"),
        (0, "body", "multiline", "Hi Ann,\n\nThe report is final as of noon.\n— Bob"),
        (0, "options", "object", "2 fields"),
        (1, "priority", "text", "high"),
        (1, "cc", "array", "1 entry"),
        (2, "1", "text", "lead@example.com"),
        (0, "attachment", "null", "null"),
    ]
    rows, truncated = field_rows({"many": list(range(100))}, limit=10)
    assert truncated and len(rows) == 10
    plain, _ = field_rows("just text", limit=10)
    assert [(row.label, row.kind, row.text) for row in plain] == [("(arguments)", "text", "just text")]
    assert field_rows({}, limit=10)[0][0].text == "(empty)"


# --- the item page: arguments, edits, history --------------------------------------------------------------


def test_an_open_tool_call_lists_its_arguments_in_the_agents_order_with_the_json_on_demand(post, client, alice):
    item = post(proposal_run())
    page = page_of(client, alice, item)
    fields = between(page, "data-proposed-fields", "</dl>")
    labels = re.findall(r"<dt>([^<]*)</dt>", fields)
    assert labels == ["to", "subject", "body", "options", "priority", "cc", "1", "attachment"]
    assert 'class="field-row indent-2 kind-text"><dt>1</dt><dd>lead@example.com</dd>' in fields
    # The multi-line body is one value, its line breaks kept (CSS pre-wrap), not escaped as \n.
    assert "<dd>Hi Ann,\n\nThe report is final as of noon.\n— Bob</dd>" in fields
    # The JSON is behind "Show JSON", in the same order, in a block a keyboard can reach and a screen reader names.
    json_block = between(page, "Show JSON", "</details>")
    assert 'tabindex="0" role="region" aria-label="Proposed arguments as JSON" data-proposed-args' in json_block
    shown = json.loads(text_of(json_block.split("data-proposed-args>", 1)[1].split("</pre>")[0]).replace("&quot;", '"'))
    assert list(shown) == list(ARGS)


def test_an_approval_with_edits_shows_the_word_diff_in_the_proposals_order_everywhere(post, client, alice, bob):
    item = post(proposal_run())
    decision_submit(
        item_id=item.pk, user=alice, status="resolved", payload={"approved": True, "editedArgs": EDITED}, comment="5pm."
    )
    page = page_of(client, bob, item)
    diff = between(page, 'id="proposal-diff"', "</table>")
    assert re.findall(r'<td class="path">([^<]*)<', diff) == [
        "to",
        "subject",
        "body",
        "options.priority",
        "options.cc",
        "attachment",
    ]
    assert "<del>noon.</del><ins>5pm.</ins>" in diff and "Q3 report<ins> (final)</ins>" in diff
    assert '<tr class="same">' in diff and "(unchanged)" in diff and "(changed)" in diff
    # The decision card names the edited fields and points at the diff.
    summary = text_of(between(page, "data-edit-summary>", "</p>"))
    assert summary == "2 fields edited: subject , body . See the edits"
    # The history says it as a sentence, with the same diff under Details.
    history = between(page, "data-history>", "</section>")
    assert "<strong>alice</strong> approved with 2 edits" in history
    assert "<del>noon.</del><ins>5pm.</ins>" in between(history, "<details", "</details>")
    # Nothing ran yet (no tool result): the legend does not say it did.
    assert text_of(between(page, "diff-legend", "</p>")).endswith("underlined : the approved edit")
    assert "what ran" not in page
    # The tool-call trail shows the same table, in the same order.
    trail = client.get(f"/audit/tool-calls/{item.tool_call_id}/").content.decode()
    trail_diff = between(trail, 'id="args-diff"', "</table>")
    assert re.findall(r'<td class="path">([^<]*)<', trail_diff) == re.findall(r'<td class="path">([^<]*)<', diff)
    assert "<del>noon.</del><ins>5pm.</ins>" in trail_diff
    # Once the agent reports the tool's result, what is underlined is what ran.
    InboxItem.objects.filter(pk=item.pk).update(tool_result={"content": "sent"})
    legend = text_of(between(page_of(client, bob, item), "diff-legend", "</p>"))
    assert legend.endswith("underlined : what ran instead")


def test_the_history_reads_as_sentences_with_the_payload_on_demand(post, client, alice, bob, carol, team):
    denied = post(proposal_run("t-d", "r-d"))
    decision_submit(item_id=denied.pk, user=bob, status="resolved", payload={"approved": False}, comment="Too risky.")
    page = page_of(client, alice, denied)
    sentence = text_of(between(page, 'class="history-sentence">', "</p>"))
    assert sentence.startswith("bob denied: Too risky.") and sentence.endswith("ago")
    details = between(between(page, "data-history>", "</section>"), "<details", "</details>")
    assert 'aria-label="Payload of bob’s decision #1"' in details and "&quot;approved&quot;: false" in details
    assert "<code" not in between(page, "data-history>", "<details")  # no raw JSON in the sentence

    filing = copy.deepcopy(spec_example("non_tool_input_request"))
    filing["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    form = post(filing)
    carol.groups.add(team)
    decision_submit(
        item_id=form.pk, user=carol, status="resolved", payload={"quarter": "Q1", "year": 2026, "revenue": 1}
    )
    page = page_of(client, alice, form)
    assert "<strong>carol</strong> answered the form" in page
    # The answer itself reads as fields on the decision card.
    assert re.findall(r"<dt>([^<]*)</dt>", between(page, "data-answer-fields", "</dl>")) == [
        "quarter",
        "year",
        "revenue",
    ]

    question = post(interrupt("t-q", "r-q", reason="ask_user", message="What should I tell them?"))
    decision_submit(item_id=question.pk, user=bob, status="resolved", payload={"answer": "Friday."})
    assert "<strong>bob</strong> answered in words" in page_of(client, alice, question)

    cancelled = post(interrupt("t-c", "r-c", reason="confirmation", message="Restart?"))
    decision_submit(item_id=cancelled.pk, user=bob, status="cancelled")
    assert "<strong>bob</strong> cancelled the interrupt" in page_of(client, alice, cancelled)


def test_an_item_that_expired_says_so_in_its_history(post, client, alice):
    item = post(interrupt("t-x", "r-x", reason="confirmation", message="Deploy?"))
    InboxItem.objects.filter(pk=item.pk).update(
        status="expired", outcome="expired", decided_at=timezone.now(), status_note="its expiresAt passed"
    )
    item.refresh_from_db()
    history = between(page_of(client, alice, item), "data-history>", "</section>")
    when = timezone.localtime(item.decided_at).strftime("%b %-d, %H:%M")
    assert f"Expired at {when}" in history and "no one decided" in history
    assert "its expiresAt passed" in history


def test_quorum_votes_are_counted_in_the_history(agent, post, client, alice, bob):
    agent.agent.approvals_required = 2
    agent.agent.save()
    item = post(interrupt("t-v", "r-v", reason="confirmation", message="Ship it?"))
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    history = between(page_of(client, bob, item), "data-history>", "</section>")
    assert "<strong>alice</strong> approved (1 of 2 approvals)" in history
    decision_submit(item_id=item.pk, user=bob, status="resolved", payload={"approved": True})
    history = between(page_of(client, alice, item), "data-history>", "</section>")
    assert "<strong>bob</strong> approved (2 of 2 approvals)" in history


# --- the answer form: every error on its own field, titles that read, required marks at any depth ----------


def test_each_missing_required_field_is_its_own_error_on_its_own_path():
    schema = spec_example("non_tool_input_request")["outcome"]["interrupts"][0]["responseSchema"]
    assert sorted(error["path"] for error in validate_payload(schema, {})) == ["quarter", "revenue", "year"]
    nested = validate_payload(NESTED_SCHEMA, {"startDate": "2026-01-01", "address": {}})
    assert sorted(error["path"] for error in nested) == ["address.city", "address.street"]


def test_the_decision_api_names_each_missing_field(post, client, alice):
    item = post(interrupt("t-f", "r-f", reason="input_required", message="Ship to?", responseSchema=NESTED_SCHEMA))
    client.force_login(alice)
    response = client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"address": {"zip_code": "12345"}}}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    paths = sorted(error["path"] for error in response.json()["errors"])
    assert paths == ["address.city", "address.street", "startDate"]


def test_property_names_become_titles_people_read():
    assert [humanize(name) for name in ("startDate", "start_date", "start-date", "userID", "HTTPServer", "zip")] == [
        "Start date",
        "Start date",
        "Start date",
        "User ID",
        "HTTP server",
        "Zip",
    ]


def test_the_form_schema_has_titles_and_required_marks_at_every_depth_and_leaves_the_agents_alone():
    original = copy.deepcopy(NESTED_SCHEMA)
    fitted = form_schema(NESTED_SCHEMA)
    assert NESTED_SCHEMA == original  # validation keeps using the agent's schema as it is
    properties = fitted["properties"]
    assert properties["startDate"]["title"] == "Start date" and properties["startDate"]["required"] is True
    assert properties["contact_name"]["title"] == "Who to call" and "required" not in properties["contact_name"]
    address = properties["address"]
    assert address["title"] == "Address" and address["required"] == ["street", "city"]
    assert address["properties"]["street"] == {"type": "string", "title": "Street", "required": True}
    assert address["properties"]["zip_code"] == {"type": "string", "title": "Zip code"}
    listed = form_schema({"type": "array", "items": {"type": "object", "properties": {"e_mail": {"type": "string"}}}})
    assert listed["items"]["properties"]["e_mail"]["title"] == "E mail"


def test_a_fields_description_is_shown_as_its_help_text_and_a_groups_stays_its_own():
    """django-jsonform shows a field's ``help_text`` under it and ignores its JSON Schema description."""
    fitted = form_schema(
        {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Six letters"},
                "own": {"type": "string", "description": "Ignored", "help_text": "The agent's words"},
                "address": {"type": "object", "description": "Where to ship", "properties": {}},
            },
        }
    )["properties"]
    assert fitted["code"]["help_text"] == "Six letters"
    assert fitted["own"]["help_text"] == "The agent's words"
    assert "help_text" not in fitted["address"]


def test_the_form_is_handed_the_fitted_schema(post, client, alice):
    item = post(interrupt("t-s", "r-s", reason="input_required", message="Ship to?", responseSchema=NESTED_SCHEMA))
    page = page_of(client, alice, item)
    config = json.loads(re.search(r'data-django-jsonform="([^"]*)"', page).group(1).replace("&quot;", '"'))
    assert config["schema"]["properties"]["startDate"]["title"] == "Start date"
    assert config["schema"]["properties"]["address"]["properties"]["city"]["required"] is True
