"""What the approver sees is the truth: stored outcomes (item, API, filter), the run's real deadline,
dead siblings closed at once, the resume's state on every decided item, the deciders told when it fails,
and no click offered that cannot succeed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail

from inbox.decisions.services import decision_submit
from inbox.expiry.services import SIBLING_NOTE, expire_sweep
from inbox.models import InboxItem, Resume
from inbox.teams.failures import notify_delivery_failed
from inbox.web import fragments
from tests.factories import InboxItemFactory, RunFactory
from tests.inbox.conftest import NOW

DENY = {"approved": False}
APPROVE = {"approved": True}


def decide(item, user, payload=APPROVE, status="resolved"):
    decision_submit(item_id=item.pk, user=user, status=status, payload=payload)
    item.refresh_from_db()
    return item


@pytest.mark.parametrize(
    ("payload", "status", "outcome"),
    [
        (APPROVE, "resolved", "approved"),
        (DENY, "resolved", "denied"),
        (None, "cancelled", "cancelled"),
    ],
)
def test_the_decision_service_stores_what_the_decision_means(stored_run, alice, payload, status, outcome):
    (item,) = stored_run("t-1", "r-1", 30).items.all()
    assert item.outcome == ""
    item = decide(item, alice, payload, status)
    assert (item.status, item.outcome) == (status, outcome)
    assert item.outcome_label == InboxItem.Outcome(outcome).label


def test_edits_and_answers_have_outcomes_of_their_own(db, alice, agent):
    edited = InboxItemFactory(
        run__agent=agent.agent,
        reason="tool_call",
        response_schema={
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
            "required": ["approved"],
        },
    )
    question = InboxItemFactory(run__agent=agent.agent, reason="ask_user", message="What should I tell them?")
    assert decide(edited, alice, {"approved": True, "editedArgs": {"to": "x"}}).outcome == "approved_with_edits"
    assert decide(question, alice, "Tell them Friday.").outcome == "answered"


def test_expiry_stores_the_expired_outcome_and_closes_the_siblings_with_the_reason(stored_run):
    run = stored_run("t-1", "r-1", 5, 60)
    assert expire_sweep(now=NOW + timedelta(minutes=6)) == 2
    first, second = run.items.order_by("position")
    assert (first.outcome, second.outcome) == ("expired", "expired")
    assert second.status_note == SIBLING_NOTE


def test_a_run_posted_with_one_interrupt_already_past_closes_its_siblings_at_once(post_run):
    run = post_run("t-1", "r-1", 30, -1, None)
    items = list(run.items.order_by("position"))
    assert [item.status for item in items] == ["expired", "expired", "expired"]
    assert [item.outcome for item in items] == ["expired", "expired", "expired"]
    assert items[0].status_note == SIBLING_NOTE
    assert items[1].status_note == "expiresAt was already past when the run was posted"


def test_the_api_has_the_outcome_and_filters_by_it(client, alice, stored_run):
    denied, approved, still_open = (stored_run(f"t-{n}", f"r-{n}", 30).items.get() for n in range(3))
    decide(denied, alice, DENY)
    decide(approved, alice, APPROVE)
    client.force_login(alice)

    rows = client.get("/api/v1/items").json()["results"]
    assert {row["id"]: row["outcome"] for row in rows} == {
        denied.pk: "denied",
        approved.pk: "approved",
        still_open.pk: "",
    }
    assert [row["id"] for row in client.get("/api/v1/items?outcome=denied").json()["results"]] == [denied.pk]
    assert [row["id"] for row in client.get("/api/v1/items?outcome=none").json()["results"]] == [still_open.pk]
    refused = client.get("/api/v1/items?outcome=resolved")
    assert refused.status_code == 400 and "outcome" in refused.json()["errors"][0]["path"]


def test_the_openapi_schema_documents_the_outcome_filter(client, staff):
    client.force_login(staff)
    schema = client.get("/api/schema/?format=json").json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/items"]["get"]["parameters"]}
    assert "denied" in parameters["outcome"]["schema"]["enum"]
    assert "ItemOutcomeEnum" in schema["components"]["schemas"]


def test_the_item_page_says_denied_and_claims_no_tool_ran(client, alice, agent):
    item = InboxItemFactory(run__agent=agent.agent, reason="tool_call", tool_call_id="tc-1", message="Send it?")
    decide(item, alice, DENY)
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert 'data-outcome="denied">Denied</span>' in page
    assert "No tool result: the call was denied" in page
    assert "The tool ran" not in page
    listing = client.get("/inbox/?tab=decided").content.decode()
    assert 'data-outcome="denied">Denied</span>' in listing


def test_a_failed_delivery_shows_on_the_item_in_the_list_and_under_its_filter(client, alice, stored_run):
    failed_run, fine_run = stored_run("t-1", "r-1", 30), stored_run("t-2", "r-2", 30)
    failed, fine = decide(failed_run.items.get(), alice), decide(fine_run.items.get(), alice)
    Resume.objects.filter(run=failed_run).update(state="failed", attempts=6, last_error="agent answered 502")
    Resume.objects.filter(run=fine_run).update(state="delivered", attempts=1)
    client.force_login(alice)

    page = client.get(failed.get_absolute_url()).content.decode()
    assert 'data-delivery="failed"' in page
    assert "The answer did not reach the agent after 6 attempts: agent answered 502." in page
    assert "the resume goes back to the agent" not in page
    decided = client.get("/inbox/?tab=decided").content.decode()
    assert decided.count('data-delivery="failed"') == 1 and decided.count('data-delivery="delivered"') == 1
    only_failed = client.get("/inbox/?tab=decided&delivery=failed")
    assert [item.pk for item in only_failed.context["items"]] == [failed.pk]
    assert fine.pk not in [item.pk for item in only_failed.context["items"]]


def test_the_people_who_decided_are_emailed_when_the_delivery_fails(alice, bob, stored_run, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    run = stored_run("t-1", "r-1", 30, 30)
    first, second = run.items.order_by("position")
    decide(first, alice)
    decide(second, bob, DENY)
    resume = Resume.objects.get(run=run)
    Resume.objects.filter(pk=resume.pk).update(state="failed", attempts=6, last_error="agent answered 502")
    mail.outbox.clear()

    assert notify_delivery_failed(resume.pk) == 2
    assert sorted(message.to[0] for message in mail.outbox) == sorted([alice.email, bob.email])
    assert "agent answered 502" in mail.outbox[0].body and run.get_absolute_url() in mail.outbox[0].body


def test_a_delivered_resume_emails_no_one(alice, stored_run, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    run = stored_run("t-1", "r-1", 30)
    decide(run.items.get(), alice)
    mail.outbox.clear()
    assert notify_delivery_failed(Resume.objects.get(run=run).pk) == 0 and mail.outbox == []


def test_an_item_shows_the_runs_deadline_when_a_sibling_expires_first(client, alice, stored_run):
    run = stored_run("t-1", "r-1", 10, 600)
    soon, late = run.items.order_by("position")
    decide(soon, alice)
    client.force_login(alice)
    page = client.get(late.get_absolute_url()).content.decode()
    deadline = soon.expires_at.isoformat()
    assert f'data-expires="{deadline}"' in page and "data-run-deadline" in page
    assert "(the run’s deadline)" in page
    listing = client.get("/inbox/").content.decode()
    assert f'data-expires="{deadline}"' in listing


def test_an_item_closed_by_its_sibling_says_why_and_offers_no_form(client, alice, stored_run):
    run = stored_run("t-1", "r-1", 5, 600)
    expire_sweep(now=NOW + timedelta(minutes=6))
    closed = run.items.get(position=1)
    client.force_login(alice)
    page = client.get(closed.get_absolute_url()).content.decode()
    assert "Closed as expired at" in page and SIBLING_NOTE in page
    assert "data-decision-form" not in page
    assert 'data-outcome="expired">Expired</span>' in page


def test_the_requester_sees_approve_disabled_with_the_reason(client, alice, agent):
    run = RunFactory(agent=agent.agent, requested_by=alice.get_username())
    item = InboxItemFactory(run=run)
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert 'data-action="approve" disabled aria-describedby="self-approval-why"' in page
    assert "You asked for this action, so someone else must approve it." in page


def test_set_all_is_offered_only_where_an_interrupt_can_be_approved(client, alice, agent):
    form_only = RunFactory(agent=agent.agent)
    InboxItemFactory(run=form_only, reason="input_required", response_schema={"type": "object"})
    confirmations = RunFactory(agent=agent.agent)
    InboxItemFactory(run=confirmations)
    client.force_login(alice)
    assert "data-set-all" not in client.get(form_only.get_absolute_url()).content.decode()
    assert "data-set-all" in client.get(confirmations.get_absolute_url()).content.decode()


def test_a_run_without_interrupts_never_says_0_of_0_decided(client, alice, agent):
    run = RunFactory(agent=agent.agent, outcome="success")
    client.force_login(alice)
    page = client.get(run.get_absolute_url()).content.decode()
    assert "0 of 0" not in page and "no interrupts: nothing waits on a decision" in page


def test_the_run_header_says_the_resumes_real_state(client, alice, stored_run):
    run = stored_run("t-1", "r-1", 30)
    decide(run.items.get(), alice)
    Resume.objects.filter(run=run).update(state="delivered")
    client.force_login(alice)
    page = client.get(run.get_absolute_url()).content.decode()
    assert (
        '<span class="delivery-mark delivery-delivered" data-delivery="delivered" '
        'title="The agent received the answer and continued its run.">Delivered</span>'
    ) in page


def test_a_live_push_to_the_run_page_replaces_the_header_line_out_of_band(alice, stored_run):
    run = stored_run("t-1", "r-1", 30)
    decide(run.items.get(), alice)
    Resume.objects.filter(run=run).update(state="failed", last_error="the agent answered 502")
    view = fragments.LiveView.parse(f"view=run&run={run.pk}")
    html = fragments.render(view, alice, [("resume.state", {"run": run.pk})]).html
    header = html[html.index('hx-swap-oob="outerHTML:.item-head [data-run-status]"') :]
    assert header.startswith('hx-swap-oob="outerHTML:.item-head [data-run-status]">1 of 1 decided')
    assert 'data-delivery="failed" title="The answer did not reach the agent: the agent answered 502.' in header
    assert ">Failed: needs a person</span>: the agent answered 502" in header


def test_an_open_question_without_a_schema_is_answered_not_approved(client, alice, agent):
    """An extension reason, no schema, a message asking an open question: one answer field under the question,
    no Approve / Deny (``{"approved": true}`` is no answer to "What should I tell them?")."""
    item = InboxItemFactory(run__agent=agent.agent, reason="ask_user", message="What should I tell them?")
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    form = page[page.index("data-decision-form") :]
    assert "data-question>What should I tell them?</p>" in form
    assert 'name="answer_text"' in form and 'data-action="approve"' not in form and 'data-action="deny"' not in form
    refused = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "approve"})
    assert refused.status_code == 400 and InboxItem.objects.get(pk=item.pk).status == "open"
    empty = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "text", "answer_text": "  "})
    assert empty.status_code == 400 and InboxItem.objects.get(pk=item.pk).status == "open"
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "text", "answer_text": " Friday at 10. "})
    item.refresh_from_db()
    assert (item.response_payload, item.outcome) == ({"answer": "Friday at 10."}, "answered")


def test_a_yes_no_question_of_an_unknown_reason_offers_approve_deny_and_words(client, alice, agent):
    item = InboxItemFactory(run__agent=agent.agent, reason="ask_user", message="Shall I send it?")
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert 'data-action="approve"' in page and '<details class="edit-box text-answer" data-text-answer>' in page
    assert "sent to the agent as <code>{&quot;answer&quot;: &quot;…&quot;}</code>" in page


def test_a_confirmation_offers_no_free_text_answer(client, alice, agent):
    item = InboxItemFactory(run__agent=agent.agent, reason="confirmation", message="What about it?")
    client.force_login(alice)
    assert "data-text-answer" not in client.get(item.get_absolute_url()).content.decode()


def test_an_empty_inbox_tells_a_newcomer_what_to_do(client, alice):
    client.force_login(alice)
    page = client.get("/inbox/").content.decode()
    assert "data-newcomer" in page and "manage.py agent_create" in page and "Demo agent" in page


def test_approvers_see_their_audit_log_and_notification_settings_in_the_navigation(client, alice):
    client.force_login(alice)
    page = client.get("/inbox/").content.decode()
    assert '<a href="/audit/"' in page and '<a href="/inbox/settings/notifications/"' in page
    assert client.get("/audit/").status_code == 200
