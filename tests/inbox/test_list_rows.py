"""The list's rows as the page draws them (``templates/inbox/_rows.html``): what an agent sent stays text, the row
says why it cannot be ticked, and an open row gives its run's deadline."""

from __future__ import annotations

import html as entities
import re
from datetime import timedelta

import pytest
from django.template import Context, Template
from django.template.loader import render_to_string
from django.test import Client
from django.utils import timezone

from inbox.models import InboxItem
from inbox.resumes.states import delivery_of_item
from tests.factories import InboxItemFactory, RunFactory

pytestmark = pytest.mark.django_db

PREFIX = "<script>alert(1)</script> & \"quotes\" 'single' "
HOSTILE = PREFIX + "x" * 700


def rows_html(client: Client, user, query: str = "") -> str:
    client.force_login(user)
    response = client.get(f"/inbox/?{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_what_the_agent_sent_is_text_in_the_row(client, alice, agent):
    run = RunFactory(agent=agent.agent)
    InboxItemFactory(run=run, message=HOSTILE, reason="custom<b>", raw={"id": "x", "reason": "custom<b>"})
    html = rows_html(client, alice)
    assert "<script>alert(1)</script>" not in html
    assert "custom&lt;b&gt;" in html and "custom<b>" not in html
    # The message is cut at 600 characters with "…", and the whole cut text is in the link's title.
    title, text = re.search(r'<a class="row-link" href="[^"]+" title="([^"]*)">([^<]*)</a>', html).groups()
    assert entities.unescape(text) == entities.unescape(title) == HOSTILE[:599] + "…"


def test_a_row_says_why_it_cannot_be_ticked(client, alice, bob, agent):
    run = RunFactory(agent=agent.agent)
    InboxItemFactory(run=run, message="Held by bob", claimed_by=bob, claimed_at=timezone.now())
    InboxItemFactory(run=RunFactory(agent=agent.agent), message="Mine to pick")
    html = rows_html(client, alice)
    assert 'data-bulk-note="claimed"' in html and "Claimed by bob: only they decide it" in html
    assert 'data-holder="bob"' in html
    assert html.count("data-bulk-select") == 1  # only the unclaimed row has a checkbox


def test_an_open_row_gives_its_runs_deadline_and_a_decided_row_its_outcome_and_delivery(client, alice, agent):
    now = timezone.now()
    run = RunFactory(agent=agent.agent)
    late = InboxItemFactory(run=run, message="Later one", expires_at=now + timedelta(hours=5))
    InboxItemFactory(run=run, message="Sooner one", expires_at=now + timedelta(minutes=30))
    html = rows_html(client, alice)
    row = html[html.index(f'data-item-id="{late.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "another interrupt of this run expires then" in row
    assert "in 29m " in row or "in 30m " in row  # as inbox.js counts down: the same before its script runs

    decided = InboxItemFactory(
        run=RunFactory(agent=agent.agent),
        status=InboxItem.Status.RESOLVED,
        response_payload={"approved": False},
        decided_by=alice,
        decided_at=now,
    )
    html = rows_html(client, alice, "tab=decided")
    row = html[html.index(f'data-item-id="{decided.pk}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-outcome="denied"' in row and ">Denied<" in row and "by alice" in row
    assert 'data-delivery="none"' in row


def _without_time_left(html: str) -> str:
    """The rows with each ``<time>``'s text left out (its datetime attribute stays)."""
    return re.sub(r"(<time\b[^>]*>)[^<]*(</time>)", r"\1\2", html)


def test_the_rows_fragment_draws_the_rows_the_page_draws(client, alice, bob, agent):
    """Polling clients fetch rows from /inbox/rows/: the same row, the viewer's own claim included."""
    now = timezone.now()
    mine = InboxItemFactory(run=RunFactory(agent=agent.agent), message="Held by me", claimed_by=alice, claimed_at=now)
    theirs = InboxItemFactory(run=RunFactory(agent=agent.agent), message="Held by bob", claimed_by=bob, claimed_at=now)
    # The time left is rendered to the second when each is drawn: the two requests may fall on either side of one.
    page = _without_time_left(rows_html(client, alice))
    fragment = _without_time_left(client.get(f"/inbox/rows/?ids={mine.pk},{theirs.pk}").content.decode())
    for item, holder in ((mine, "You"), (theirs, "bob")):
        in_page = page[page.index(f'<tr data-item-row data-item-id="{item.pk}"') :]
        in_page = in_page[: in_page.index("</tr>") + 5]
        assert in_page in fragment
        assert f'href="/inbox/items/{item.pk}/"' in in_page and f"</span>{holder} <span" in in_page


def test_a_shared_partial_draws_nothing_for_what_is_undefined(settings):
    """An audit entry may have no item: its badge is empty, with DEBUG on too."""
    settings.DEBUG = True
    html = render_to_string("inbox/_outcome_badge.html", {"item": None})
    assert html == '<span class="pill pill-" data-outcome=""></span>'


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_the_rows_filters_draw_what_djangos_own_draw(settings, zone):
    """The rows' ``iso``, ``stamp`` and ``clip`` give what ``date:"c"``, ``date:"Y-m-d H:i:s T"`` and
    ``truncatechars`` give, in the viewer's time zone."""
    settings.TIME_ZONE = zone
    ours = Template("{% load inbox_tags %}{{ at|iso }}|{{ at|stamp }}|{{ text|clip:8 }}|{{ short|clip:8 }}")
    django = Template(
        '{{ at|date:"c" }}|{{ at|date:"Y-m-d H:i:s T" }}|{{ text|truncatechars:8 }}|{{ short|truncatechars:8 }}'
    )
    for at in (timezone.now(), timezone.now() + timedelta(days=180), None):
        values = Context({"at": at, "text": '<b>long & "quoted"</b>', "short": "<i>ok"})
        assert ours.render(values) == django.render(values)


def _due_cell(html: str, pk: int) -> str:
    row = html[html.index(f'<tr data-item-row data-item-id="{pk}"') :]
    row = row[: row.index("</tr>")]
    return row[row.index('<td class="col-due">') + len('<td class="col-due">') : row.rindex("</td>")]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_a_rows_deadline_outcome_and_delivery_are_what_the_shared_partials_draw(client, alice, agent, settings, zone):
    """The row draws its due cell from values worked out once per page (``row_tags.list_rows``), not through
    ``_deadline.html``, ``_outcome_badge.html`` and ``_delivery_mark.html``: it must say what they say, in the
    viewer's time zone, whatever the deadline (the run's, the item's own, the agent's default)."""
    settings.TIME_ZONE = zone
    now = timezone.now()
    run = RunFactory(agent=agent.agent)
    later = InboxItemFactory(run=run, message="Later one", expires_at=now + timedelta(hours=5))
    InboxItemFactory(run=run, message="Sooner one", expires_at=now + timedelta(minutes=30))
    defaulted = InboxItemFactory(
        run=RunFactory(agent=agent.agent), expires_at=now + timedelta(days=3), expires_at_defaulted=True
    )
    decided = InboxItemFactory(
        run=RunFactory(agent=agent.agent),
        status=InboxItem.Status.RESOLVED,
        response_payload={"approved": True},
        decided_by=alice,
        decided_at=now,
    )
    page = _without_time_left(rows_html(client, alice))
    for item in (later, defaulted):
        item.refresh_from_db()
        partial = _without_time_left(render_to_string("inbox/_deadline.html", {"item": item}))
        assert "countdown" in partial and _due_cell(page, item.pk) == partial
    decided.refresh_from_db()
    badge = render_to_string("inbox/_outcome_badge.html", {"item": decided})
    mark = render_to_string("inbox/_delivery_mark.html", {"delivery_shown": delivery_of_item(decided)})
    due = _due_cell(rows_html(client, alice, "tab=decided"), decided.pk)
    assert "Approved" in badge and 'data-delivery="' in mark
    assert due == f'{badge} <span class="sub-inline">by alice</span> {mark}'


def test_a_held_rows_avatar_is_what_the_shared_partial_draws(client, alice, bob, agent):
    """The holder chip draws the avatar from values worked out once per page, not through ``_avatar.html``."""
    bob.first_name, bob.last_name = "Bo", "Brown"
    bob.save(update_fields=["first_name", "last_name"])
    held = InboxItemFactory(run=RunFactory(agent=agent.agent), claimed_by=bob, claimed_at=timezone.now())
    page = rows_html(client, alice)
    row = page[page.index(f'<tr data-item-row data-item-id="{held.pk}"') :]
    avatar = render_to_string("inbox/_avatar.html", {"person": bob, "small": True})
    assert 'data-hue="' in avatar and ">BB<" in avatar
    assert (
        f'<span class="holder-chip" data-holder="bob" title="Claimed by bob">{avatar}bob ' in row[: row.index("</tr>")]
    )
