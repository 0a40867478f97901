"""The "Approve with edits" preview (``POST /inbox/items/<id>/edit-diff/``): the server's field-by-field word
diff as the approver types; bad, huge or deep input is told, never a 500, and nothing is stored."""

from __future__ import annotations

import json

import pytest

from inbox.limits import MAX_ANSWER_BYTES
from inbox.models import Decision
from tests.factories import InboxItemFactory, RunFactory

pytestmark = pytest.mark.django_db

PROPOSAL = {"to": "a@b.com", "subject": "Hi", "body": "Hi"}


@pytest.fixture
def proposal_item(agent):
    run = RunFactory(agent=agent.agent)
    return InboxItemFactory(
        run=run,
        reason="tool_call",
        tool_call_id="tc-1",
        tool_call={"id": "tc-1", "name": "sendEmail", "args": PROPOSAL, "argsText": json.dumps(PROPOSAL)},
    )


def preview(client, item, text: str):
    return client.post(f"/inbox/items/{item.pk}/edit-diff/", {"edited_args": text})


def test_the_preview_shows_each_changed_field_word_by_word_in_the_proposals_order(client, alice, proposal_item):
    client.force_login(alice)
    response = preview(client, proposal_item, json.dumps({"body": "Hi there", "to": "a@b.com", "subject": "Yo"}))
    html = response.content.decode()
    assert response.status_code == 200
    paths = [part.split("<", 1)[0] for part in html.split('class="path">')[1:]]
    assert paths == ["to", "subject", "body"]  # the proposal's order, not the edit's
    assert "Hi<ins> there</ins>" in html
    assert html.count('class="changed"') == 2 and html.count('class="same"') == 1
    assert not Decision.objects.exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"to": ', "Not valid JSON yet"),
        ("[" * 500 + "]" * 500, "Not valid JSON yet"),
        ('"' + "x" * (MAX_ANSWER_BYTES + 10) + '"', "too large"),
        (json.dumps(PROPOSAL), "No changes: identical to the proposal."),
    ],
)
def test_bad_huge_deep_or_unchanged_input_is_told_not_a_500(client, alice, proposal_item, text, said):
    client.force_login(alice)
    response = preview(client, proposal_item, text)
    assert response.status_code == 200
    assert said in response.content.decode()


def test_only_someone_who_sees_the_item_gets_a_preview(client, carol, proposal_item):
    assert preview(client, proposal_item, "{}").status_code == 302  # signed out: to the login page
    client.force_login(carol)  # in no team of the agent
    assert preview(client, proposal_item, "{}").status_code == 404
    assert client.get(f"/inbox/items/{proposal_item.pk}/edit-diff/").status_code == 405
