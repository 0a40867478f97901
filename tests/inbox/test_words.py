"""Words people read, not data (issue 48, point 7): what the pages say, read as a person reads them."""

from __future__ import annotations

import html
import re

import pytest

from tests.factories import UserFactory


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)).strip())


def _page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_staff_in_no_team_are_not_told_that_no_items_reach_them(client, staff, db):
    said = text_of(_page(client, staff, "/inbox/settings/notifications/").split("Your teams", 1)[1].split("</p>")[0])
    assert "no items reach you" not in said
    assert said.startswith("You are in no team. As staff you see every item in the inbox")
    newcomer = UserFactory(username="newcomer")
    said = text_of(_page(client, newcomer, "/inbox/settings/notifications/").split("Your teams", 1)[1].split("</p>")[0])
    assert said.startswith("You are in no team yet, so no items reach you: ask a staff member")


ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
RUN_ERROR_NOTE = (
    "The agent answered RUN_ERROR to the resume sent at 2026-03-02T10:15:07.123456+00:00: "
    "resume[0].interruptId 'int-1' is not an open interrupt"
)


def test_a_delivery_failure_leads_with_what_happened_and_what_to_do(client, staff, alice, stored_run, settings):
    """It read "Last error: The agent answered RUN_ERROR to the resume sent at 2026-03-02T10:15:07.123456+00:00:
    resume[0].interruptId …" on the run page, and the same in the e-mail and the stats table."""
    from django.core import mail

    from inbox.models import Resume
    from inbox.teams.failures import notify_delivery_failed
    from tests.inbox.test_truth import decide

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    run = stored_run("t-1", "r-1", 30)
    item = decide(run.items.get(), alice)
    Resume.objects.filter(run=run).update(state="failed", attempts=1, last_error=RUN_ERROR_NOTE)
    lead = "The agent could not act on the answer: it ended its run with an error"
    to_do = "It is not sent again by itself: check the agent, then retry sending on the run page."

    item_page = _page(client, alice, item.get_absolute_url())
    said = text_of(item_page.split('data-delivery="failed"', 1)[1].split("</div>", 1)[0])
    assert lead in said and to_do in said and "“resume[0].interruptId 'int-1' is not an open interrupt”" in said
    assert "RUN_ERROR" not in said and not ISO.search(said)

    run_page = _page(client, staff, run.get_absolute_url())
    alert = text_of(run_page.split("data-resume-error>", 1)[1].split("</div>", 1)[0])
    assert alert.startswith(f"Failed: needs a person. {lead}") and alert.endswith(to_do)
    assert "RUN_ERROR" not in alert and "Last error" not in run_page

    mail.outbox.clear()
    assert notify_delivery_failed(Resume.objects.get(run=run).pk) == 1
    body = mail.outbox[0].body
    assert lead in body and to_do in body and "RUN_ERROR" not in body and not ISO.search(body)

    stats = _page(client, staff, "/audit/stats/?days=7")
    table = stats.split('id="resumes"', 1)[1].split("</table>", 1)[0]
    assert "ended its run with an error" in table and "RUN_ERROR" not in table and not ISO.search(table)


def test_times_in_a_delivery_note_read_as_times():
    from inbox.resumes.states import delivery_from

    note = "agent answered 502 (gave up after 6 attempt(s): the retry window ended at 2026-03-02T10:15:07.5+00:00)"
    sentence = delivery_from("failed", attempts=6, last_error=note).sentence
    assert "the retry window ended at 2026-03-02 10:15:07 UTC" in sentence and not ISO.search(sentence)


def test_the_audit_log_says_an_events_details_in_words(client, staff, agent):
    """The Details column was the event's data as one line of JSON ({"attempts": 6, "error": …, "until": "2026-…T…"})."""
    from inbox.audit.record import Actor, audit

    audit(
        actor=Actor.system(),
        verb="resume.failed",
        obj=agent.agent,
        data={
            "attempts": 6,
            "gaveUp": True,
            "error": "agent answered 502 (gave up: the retry window ended at 2026-03-02T10:15:07.123456+00:00)",
            "fields": ["slug", "name"],
        },
    )
    page = _page(client, staff, "/audit/?verb=resume.failed")
    cell = page.split("data-audit-details>", 1)[1].split("</ul>", 1)[0]
    lines = [text_of(line) for line in re.findall(r"<li>(.*?)</li>", cell)]
    assert lines == [
        "Attempts: 6",
        "Error: agent answered 502 (gave up: the retry window ended at 2026-03-02 10:15:07 UTC)",
        "Fields: slug, name",
        "Gave up: yes",
    ]  # by key: the same on SQLite and on PostgreSQL, whose jsonb keeps no insertion order
    assert not ISO.search(cell) and "{" not in cell


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("agent=mailer&reason=tool_call", "Mail robot tool calls"),
        ("tab=decided&outcome=denied&q=refund", "Denied “refund” (decided)"),
        ("sort=oldest", "Oldest open"),
        ("tab=decided", "Decided"),
    ],
)
def test_the_save_form_offers_the_name_a_person_would_give_the_view(client, alice, agent, query, name):
    """The name field was empty; the page showed the filters' values (agent mailer, reason tool_call)."""
    from urllib.parse import urlencode

    agent.agent.name = "Mail robot"
    agent.agent.save(update_fields=["name"])
    page = _page(client, alice, "/inbox/views/?" + urlencode({"query": query}))
    field = re.search(r'<input type="text" name="name" value="([^"]*)"[^>]*data-view-name>', page)
    assert field is not None and html.unescape(field.group(1)) == name


def test_a_bulk_decision_is_confirmed_once(client, alice, agent, ingest, settings):
    """After a bulk approval the list said "3 decided." and, beside it, the undo toast "Approved 3 items — Undo":
    the toast alone confirms it now; a summary stays for what the toast does not say (a failure)."""
    from inbox.models import InboxItem
    from tests.inbox.test_team_pages import tool_approval

    settings.INBOX_UNDO_SECONDS = 10.0
    for n in range(4):
        assert ingest(agent, tool_approval(n)).status_code == 201
    items = list(InboxItem.objects.order_by("pk"))
    client.force_login(alice)

    page = client.post("/inbox/bulk/", {"ids": [i.pk for i in items[:3]], "action": "approve"}, follow=True)
    said = text_of(page.content.decode().split("<main", 1)[1])
    assert said.count("Approved 3 items") == 1 and "3 decided" not in said
    assert "data-bulk-summary" not in page.content.decode()
    assert "data-bulk-summary" not in client.get("/inbox/").content.decode()  # (the toast stays while undo can)

    page = client.post("/inbox/bulk/", {"ids": [items[3].pk, 999_999], "action": "deny"}, follow=True)
    summary = text_of(page.content.decode().split("data-bulk-summary>", 1)[1].split("</div>", 1)[0])
    assert summary.startswith("1 decided , 1 could not be decided: Item 999999 not found")


def test_a_failed_notice_says_its_times_as_times(client, alice):
    """The notifications page showed "(gave up: retries end at 2026-03-02T10:15:07.123456+00:00)"."""
    from django.utils import timezone

    from inbox.models import Notice

    Notice.objects.create(
        kind=Notice.Kind.choices[0][0],
        channel=Notice.Channel.EMAIL,
        user=alice,
        to=alice.email,
        subject="New item",
        body="…",
        state=Notice.State.FAILED,
        attempts=9,
        last_error="421 try later (gave up: retries end at 2026-03-02T10:15:07.123456+00:00)",
        retry_until=timezone.now(),
    )
    page = _page(client, alice, "/inbox/settings/notifications/")
    assert "retries end at 2026-03-02 10:15:07 UTC" in page and not ISO.search(page.split('id="notices"', 1)[1])
