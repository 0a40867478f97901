"""The approver pages through Django's test client: what they show, to whom, and what their forms store."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.models import Decision, InboxItem, Run
from tests.conftest import spec_example
from tests.inbox.conftest import XSS, interrupt_run, quarterly_filing


def email_with_proposal() -> dict:
    """The spec's approve-with-edits example, preceded by the tool call and snapshots it interrupts."""
    args = {"to": "a@b.com", "subject": "Hi", "body": "Hi"}
    finished = spec_example("approve_with_edits")
    return {
        "events": [
            {"type": "RUN_STARTED", "threadId": "thread-2", "runId": "run-10"},
            {"type": "TOOL_CALL_START", "toolCallId": "tc-42", "toolCallName": "sendEmail"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-42", "delta": json.dumps(args)},
            {"type": "TOOL_CALL_END", "toolCallId": "tc-42"},
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {"id": "m1", "role": "user", "content": "Email a@b.com and say hi"},
                    {
                        "id": "m2",
                        "role": "assistant",
                        "content": "Drafted it.",
                        "toolCalls": [
                            {
                                "id": "tc-42",
                                "type": "function",
                                "function": {"name": "sendEmail", "arguments": json.dumps(args)},
                            }
                        ],
                    },
                ],
            },
            {"type": "STATE_SNAPSHOT", "snapshot": {"draftCount": 1}},
            finished,
        ]
    }


@pytest.fixture
def posted(agent, ingest):
    """Post a run as the 'mailer' agent; returns its items in order."""

    def post(body, as_agent=None) -> list[InboxItem]:
        response = ingest(as_agent or agent, body)
        assert response.status_code == 201, response.content
        return list(Run.objects.get(pk=response.json()["id"]).items.order_by("position"))

    return post


# --- access -----------------------------------------------------------------------------------------


def test_the_inbox_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/inbox/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/inbox/")


def test_the_login_page_renders_a_sign_in_form(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content and b'name="password"' in response.content


def test_an_outsider_sees_none_of_the_teams_items_and_gets_404_on_their_pages(client, carol, posted):
    item = posted(spec_example("minimal_tool_approval"))[0]
    client.force_login(carol)

    listing = client.get("/inbox/")
    assert listing.status_code == 200
    assert b"int-abc123" not in listing.content and b"a@b.com" not in listing.content
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 404
    assert client.get(f"/inbox/runs/{item.run_id}/").status_code == 404
    assert client.get(f"/inbox/runs/{item.run_id}/live/").status_code == 404
    assert client.get(f"/inbox/threads/{item.thread_id}/").status_code == 404
    assert client.post(f"/inbox/items/{item.pk}/decide/", {"action": "approve"}).status_code == 404
    assert client.post(f"/inbox/runs/{item.run_id}/decide/", {f"decision-{item.pk}": "approve"}).status_code == 404
    assert b"data-item-row" not in client.get(f"/inbox/rows/?ids={item.pk}").content
    item.refresh_from_db()
    assert item.status == "open"


# --- the list ----------------------------------------------------------------------------------------


def test_the_list_shows_each_open_item_with_agent_reason_message_tool_and_countdown(client, alice, posted):
    posted(email_with_proposal())
    client.force_login(alice)
    response = client.get("/inbox/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Mailer" in page
    assert "Tool call" in page
    assert "Send email to a@b.com? You can edit the body before approving." in page
    assert "<code>sendEmail</code>" in page
    assert 'class="countdown" data-expires="' in page
    assert '<tbody id="item-rows" data-source-url="">' in page


def test_the_tabs_count_open_decided_and_expired_items(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    InboxItem.objects.filter(pk=items[0].pk).update(status="resolved")
    InboxItem.objects.filter(pk=items[1].pk).update(status="expired")
    client.force_login(alice)
    response = client.get("/inbox/")
    assert response.context["counts"] == {"open": 1, "mine": 0, "snoozed": 0, "decided": 1, "expired": 1, "all": 3}
    page = response.content.decode()
    for tab, count in (("open", 1), ("decided", 1), ("expired", 1), ("all", 3)):
        assert f'data-count="{tab}">{count}</span>' in page
    decided = client.get("/inbox/?tab=decided").content.decode()
    assert "x@y.com" in decided and "y@z.com" not in decided and "z@w.com" not in decided


def test_the_list_filters_by_agent_reason_thread_and_message_text(client, alice, posted, make_agent):
    posted(spec_example("parallel_interrupts"))
    posted(quarterly_filing(), as_agent=make_agent("filer"))
    client.force_login(alice)

    def messages(query: str) -> list[str]:
        return [item.message for item in client.get(f"/inbox/?{query}").context["items"]]

    assert messages("agent=filer") == ["Please provide the quarterly filing details."]
    assert messages("reason=input_required") == ["Please provide the quarterly filing details."]
    assert len(messages("thread=thread-3")) == 3
    assert messages("q=Y%40Z.COM") == ["Approve sendEmail to y@z.com?"]
    empty = client.get("/inbox/?q=no-such-words").content.decode()
    assert "No items match these filters" in empty


def test_open_items_are_sorted_by_expiry_by_default_and_newest_first_on_request(client, alice, posted):
    soon = quarterly_filing()
    later = interrupt_run(
        "t-later",
        "r-later",
        [
            {
                "id": "l-1",
                "reason": "confirmation",
                "message": "later one",
                "expiresAt": (timezone.now() + timedelta(hours=9)).isoformat(),
            }
        ],
    )
    posted(soon)
    posted(later)
    client.force_login(alice)
    default = [item.interrupt_id for item in client.get("/inbox/").context["items"]]
    newest = [item.interrupt_id for item in client.get("/inbox/?sort=newest").context["items"]]
    assert default == ["int-form", "l-1"]
    assert newest == ["l-1", "int-form"]


def _three_in_a_row(posted) -> list[InboxItem]:
    """Three one-item runs posted in turn, expiring in 3, 1 and 2 hours: arrival and expiry orders differ."""
    items = []
    for n, hours in enumerate((3, 1, 2)):
        expires = (timezone.now() + timedelta(hours=hours)).isoformat()
        interrupt = {"id": f"s-{n}", "reason": "confirmation", "message": f"step {n}", "expiresAt": expires}
        items += posted(interrupt_run(f"t-s{n}", f"r-s{n}", [interrupt]))
    return items


def test_each_sort_the_open_tab_offers_orders_its_rows(client, alice, posted):
    _three_in_a_row(posted)
    client.force_login(alice)

    def ids(query: str) -> list[str]:
        return [item.interrupt_id for item in client.get(f"/inbox/?{query}").context["items"]]

    assert ids("") == ids("sort=expires") == ["s-1", "s-2", "s-0"]
    assert ids("sort=expires_last") == ["s-0", "s-2", "s-1"]
    assert ids("sort=newest") == ["s-2", "s-1", "s-0"]
    assert ids("sort=oldest") == ["s-0", "s-1", "s-2"]
    # Tabs without an index on expiry sort by arrival only: an expiry order there is the tab's default.
    assert ids("tab=all&sort=expires") == ids("tab=all") == ["s-2", "s-1", "s-0"]
    assert ids("tab=all&sort=oldest") == ["s-0", "s-1", "s-2"]


def test_sortable_headers_say_how_the_list_is_sorted_and_link_to_the_other_way_keeping_the_filters(
    client, alice, posted
):
    _three_in_a_row(posted)
    client.force_login(alice)
    page = client.get("/inbox/?reason=confirmation").content.decode()
    due = re.search(r'<th class="col-due".*?</th>', page, re.S).group(0)
    age = re.search(r'<th class="col-age".*?</th>', page, re.S).group(0)
    assert 'aria-sort="ascending"' in due and 'href="?reason=confirmation&amp;sort=expires_last"' in due
    assert "aria-sort" not in age and 'href="?reason=confirmation&amp;sort=newest"' in age
    assert '<th class="col-agent">Agent</th>' in page and '<th class="col-tool">Tool</th>' in page

    page = client.get("/inbox/?reason=confirmation&sort=newest&page=2").content.decode()
    age = re.search(r'<th class="col-age".*?</th>', page, re.S).group(0)
    assert 'aria-sort="ascending"' in age and 'href="?reason=confirmation&amp;sort=oldest"' in age  # page 1 again
    assert '<option value="newest" selected>Newest</option>' in page

    decided = client.get("/inbox/?tab=decided").content.decode()
    assert '<th class="col-due">Outcome</th>' in decided
    assert 'href="?tab=decided&amp;sort=oldest"' in decided
    assert "Expires soonest" not in decided  # the Sort select offers what the tab can sort by


def test_the_next_and_previous_open_items_follow_each_sort(alice, posted):
    from inbox.listing.detail import neighbours_in_list
    from inbox.listing.selectors import ListFilters

    first, second, third = _three_in_a_row(posted)  # expiring in 3, 1 and 2 hours
    orders = {
        "expires": (second, third, first),
        "expires_last": (first, third, second),
        "newest": (third, second, first),
        "oldest": (first, second, third),
    }
    for sort, (before, middle, after) in orders.items():
        filters = ListFilters(sort=sort)
        assert neighbours_in_list(user=alice, filters=filters, item=middle) == (after, before), sort
        following, _ = neighbours_in_list(user=alice, filters=filters, item=after)
        assert following == before, sort  # the end wraps around to the start


def test_each_open_row_without_a_bulk_checkbox_says_why_and_the_requester_is_told_they_cannot_approve(
    client, alice, bob, posted
):
    mine = posted(
        {
            **interrupt_run("t-m", "r-m", [{"id": "m-1", "reason": "confirmation", "message": "mine"}]),
            "metadata": {"requestedBy": "alice"},
        }
    )[0]
    theirs = posted(
        {
            **interrupt_run("t-b", "r-b", [{"id": "b-1", "reason": "confirmation", "message": "bob's"}]),
            "metadata": {"requestedBy": "bob"},
        }
    )[0]
    form = posted(quarterly_filing())[0]
    client.force_login(alice)
    page = client.get("/inbox/").content.decode()

    def row(item: InboxItem) -> str:
        return re.search(rf'data-item-id="{item.pk}".*?</tr>', page, re.S).group(0)

    assert 'aria-describedby="self-note-' in row(mine) and "Requested by you" in row(mine)
    assert 'name="ids"' in row(mine)  # a requester may still deny or cancel it in bulk
    assert "Requested by you" not in row(theirs) and "aria-describedby" not in row(theirs)
    assert "Needs an answer from its form: open it to decide</span>" in row(form) and 'name="ids"' not in row(form)
    assert "Needs its form" in row(form)
    # The rows fragment (polling clients) says the same.
    fragment = client.get(f"/inbox/rows/?ids={mine.pk},{form.pk}").content.decode()
    assert "Requested by you" in fragment and "Needs an answer from its form" in fragment
    # The Decided tab has no bulk bar, so no selection column either.
    assert 'class="col-select"' not in client.get("/inbox/?tab=decided").content.decode()


def test_the_list_paginates_fifty_at_a_time(client, alice, posted):
    posted(
        interrupt_run(
            "t-many",
            "r-many",
            [{"id": f"c-{n}", "reason": "confirmation", "message": f"question {n}"} for n in range(60)],
        )
    )
    client.force_login(alice)
    first = client.get("/inbox/")
    second = client.get("/inbox/?page=2")
    assert len(first.context["items"]) == 50
    assert len(second.context["items"]) == 10
    assert "51–60 of 60" in second.content.decode()


def test_tab_counts_stop_at_their_bound_and_say_so(client, alice, posted, monkeypatch):
    monkeypatch.setattr("inbox.listing.selectors.LIST_COUNT_LIMIT", 4)
    posted(
        interrupt_run(
            "t-bound",
            "r-bound",
            [{"id": f"b-{n}", "reason": "confirmation", "message": f"question {n}"} for n in range(7)],
        )
    )
    InboxItem.objects.filter(interrupt_id__in=["b-0", "b-1"]).update(status="expired")
    client.force_login(alice)
    response = client.get("/inbox/")
    page = response.content.decode()
    # 5 open (more than 4): "4+"; 2 expired: exact; all 7: "4+".
    assert 'data-count="open">4+</span>' in page
    assert 'data-count="expired">2</span>' in page
    assert 'data-count="all">4+</span>' in page
    # A text search shows its newest matches up to its own bound, and past it every tab is a lower bound.
    monkeypatch.setattr("inbox.listing.selectors.LIST_SEARCH_LIMIT", 3)
    searched = client.get("/inbox/?tab=all&q=question")
    assert 'data-count="all">3+</span>' in searched.content.decode()
    assert [item.message for item in searched.context["items"]] == ["question 6", "question 5", "question 4"]


def test_a_search_finds_older_matches_past_the_newest_rows_it_reads_first(client, alice, posted, monkeypatch):
    """On PostgreSQL a search reads the newest rows with a plain LIKE, then older ones through the trigram index:
    together they are the newest matches, whichever part finds them."""
    monkeypatch.setattr("inbox.listing.selectors.SEARCH_RECENT_ROWS", 2)
    monkeypatch.setattr("inbox.listing.selectors.LIST_SEARCH_LIMIT", 4)
    posted(
        interrupt_run(
            "t-old", "r-old", [{"id": f"q-{n}", "reason": "confirmation", "message": f"question {n}"} for n in range(5)]
        )
    )
    posted(interrupt_run("t-new", "r-new", [{"id": "o-1", "reason": "confirmation", "message": "other"}]))
    posted(interrupt_run("t-newer", "r-newer", [{"id": "q-9", "reason": "confirmation", "message": "question 9"}]))
    client.force_login(alice)

    searched = client.get("/inbox/?tab=all&q=QUESTION")

    # The two newest rows hold one match (question 9); the older ones come from the index, newest first.
    messages = [item.message for item in searched.context["items"]]
    assert messages == ["question 9", "question 4", "question 3", "question 2"]
    assert 'data-count="all">4+</span>' in searched.content.decode()
    assert [i.message for i in client.get("/inbox/?tab=all&q=other").context["items"]] == ["other"]


def test_a_search_through_the_index_leaves_the_planner_as_it_found_it(client, alice, posted, monkeypatch):
    """On PostgreSQL the older matches are read with sequential scans off for that one statement, so that a term
    the statistics overrate is still looked up in the trigram index: the setting is the server's again when the
    search returns, though the request runs inside a transaction (the test's), where a SET would last."""
    monkeypatch.setattr("inbox.listing.selectors.SEARCH_RECENT_ROWS", 1)
    posted(
        interrupt_run(
            "t-plan", "r-plan", [{"id": f"p-{n}", "reason": "confirmation", "message": f"plan {n}"} for n in range(3)]
        )
    )
    client.force_login(alice)

    found = [item.message for item in client.get("/inbox/?tab=all&q=plan").context["items"]]

    assert found == ["plan 2", "plan 1", "plan 0"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW enable_seqscan")
            assert cursor.fetchone() == ("on",)


def test_an_open_search_page_shows_matches_that_arrive_after_it_was_rendered(alice, posted):
    """A socket renders its page many times with one user object: the search's matches are read afresh for
    each render, never kept from the one before."""
    from inbox.web import fragments

    posted(interrupt_run("t-1", "r-1", [{"id": "q-1", "reason": "confirmation", "message": "question one"}]))
    view = fragments.LiveView.parse("view=list&tab=all&q=question")
    assert "question one" in fragments.render(view, alice, [], full=True).html

    posted(interrupt_run("t-2", "r-2", [{"id": "q-2", "reason": "confirmation", "message": "question two"}]))
    again = fragments.render(view, alice, [("item.created", {"item": InboxItem.objects.get(interrupt_id="q-2").pk})])

    assert "question two" in again.html and "question one" in again.html


@pytest.mark.parametrize("recent_rows", [5_000, 1])  # found among the newest rows, or through the index
def test_a_search_takes_percent_underscore_and_backslash_literally(client, alice, posted, monkeypatch, recent_rows):
    monkeypatch.setattr("inbox.listing.selectors.SEARCH_RECENT_ROWS", recent_rows)
    messages = ["discount 100% off_now \\ x", "discount 1000 offXnow", "discount 100 off now", "unrelated"]
    posted(
        interrupt_run(
            "t-lit", "r-lit", [{"id": f"l-{n}", "reason": "confirmation", "message": m} for n, m in enumerate(messages)]
        )
    )
    client.force_login(alice)

    def found(q: str) -> list[str]:
        return [item.message for item in client.get("/inbox/", {"tab": "all", "q": q}).context["items"]]

    assert found("100% off_") == [messages[0]]
    assert found("off_now \\") == [messages[0]]
    assert found("100%") == [messages[0]]
    assert sorted(found("discount 100")) == sorted(messages[:3])
    # Quotes and semicolons are text too, never SQL, on the path through the index (with its SET) or not.
    assert found("100%'; RESET enable_seqscan; --") == []
    assert found("discount'") == []


def test_the_other_tabs_badges_stop_sooner_than_the_tab_on_screen(client, alice, posted, monkeypatch):
    monkeypatch.setattr("inbox.listing.selectors.LIST_COUNT_LIMIT", 6)
    monkeypatch.setattr("inbox.listing.selectors.LIST_BADGE_COUNT_LIMIT", 3)
    posted(
        interrupt_run(
            "t-badge",
            "r-badge",
            [{"id": f"c-{n}", "reason": "confirmation", "message": f"question {n}"} for n in range(5)],
        )
    )
    client.force_login(alice)
    on_open = client.get("/inbox/").content.decode()
    assert 'data-count="open">5</span>' in on_open  # the tab on screen: exact up to 6
    assert 'data-count="all">3+</span>' in on_open  # a badge: up to 3
    on_all = client.get("/inbox/?tab=all").content.decode()
    assert 'data-count="all">5</span>' in on_all and 'data-count="open">3+</span>' in on_all


def test_text_search_finds_items_by_message_tool_name_and_thread_id_within_the_viewers_teams(
    client, alice, posted, make_agent
):
    posted(email_with_proposal())  # thread-2, tool sendEmail
    posted(quarterly_filing(), as_agent=make_agent("filer"))
    client.force_login(alice)

    def found(q: str) -> list[str]:
        return sorted(item.interrupt_id for item in client.get(f"/inbox/?tab=all&q={q}").context["items"])

    email = [item.interrupt_id for item in InboxItem.objects.filter(tool_call__name="sendEmail")]
    assert email and found("SENDEMAIL") == sorted(email)
    assert found("thread-2") == sorted(email)
    assert found("quarterly") == ["int-form"]
    assert found("no-such-words") == []


def test_an_empty_inbox_says_so_helpfully(client, alice):
    client.force_login(alice)
    page = client.get("/inbox/").content.decode()
    assert "You’re all caught up" in page


def test_the_list_page_runs_the_same_number_of_queries_for_a_page_of_fifty_whatever_the_data(
    client, alice, staff, posted, make_agent, django_assert_num_queries
):
    client.force_login(alice)
    posted(interrupt_run("t-a", "r-a", [{"id": f"a-{n}", "reason": "confirmation", "message": "a"} for n in range(3)]))
    # session, user (with the away banner's status: inbox.teams.backends), the approver's teams and agents (read
    # once per request, the agent filter's choices with them: inbox.access), the list's own 3, and the approver's
    # saved views (none here; with some, one more counts them all: test_saved_views)
    with django_assert_num_queries(7):
        client.get("/inbox/")

    # Many more items, several agents and reasons, decided ones with their decider, tool proposals.
    for index in range(3):
        other = make_agent(f"agent-x{index}")
        posted(
            interrupt_run(
                f"t-{index}",
                f"r-{index}",
                [
                    {
                        "id": f"i-{index}-{n}",
                        "reason": ["tool_call", "input_required", f"acme:r{index}"][n % 3],
                        "toolCallId": f"tc-{n}",
                        "message": f"m {n}",
                    }
                    for n in range(40)
                ],
                events=[
                    {"type": "TOOL_CALL_START", "toolCallId": f"tc-{n}", "toolCallName": "sendEmail"} for n in range(40)
                ]
                + [{"type": "TOOL_CALL_END", "toolCallId": f"tc-{n}"} for n in range(40)],
            ),
            as_agent=other,
        )
    InboxItem.objects.filter(reason="input_required").update(status="resolved", decided_by=staff)
    for query in ("", "tab=all", "tab=decided&sort=expires", "tab=all&page=2&reason=tool_call&q=m"):
        response = client.get(f"/inbox/?{query}")
        assert len(response.context["items"]) > 0
        # A text search reads its matches once, for the rows and the counts alike: one query more.
        with django_assert_num_queries(8 if "q=" in query else 7):
            response = client.get(f"/inbox/?{query}")
            response.content  # noqa: B018 -- rendering included


def test_a_tab_its_count_finds_empty_reads_no_rows_and_says_so(client, alice, posted, django_assert_num_queries):
    posted(interrupt_run("t-a", "r-a", [{"id": f"a-{n}", "reason": "confirmation", "message": "a"} for n in range(3)]))
    client.force_login(alice)
    client.get("/inbox/?tab=mine")
    # The list's 7 (test above) but the rows' own statement: the tab counts already found none to read.
    with django_assert_num_queries(6):
        page = client.get("/inbox/?tab=mine").content.decode()
    assert "<tr data-item-row" not in page and "Nothing on your plate" in page
    # The Open tab beside it still lists its three.
    assert client.get("/inbox/").content.decode().count("<tr data-item-row") == 3


def test_the_rows_fragment_returns_only_the_asked_rows_that_match_the_filters(client, alice, posted, make_agent):
    items = posted(spec_example("parallel_interrupts"))
    form = posted(quarterly_filing(), as_agent=make_agent("filer"))[0]
    client.force_login(alice)
    ids = ",".join(str(item.pk) for item in [*items, form])
    html = client.get(f"/inbox/rows/?ids={ids}&agent=filer").content.decode()
    assert html.count("<tr data-item-row") == 1
    assert f'data-item-id="{form.pk}"' in html
    assert client.get("/inbox/rows/?ids=1,x").status_code == 400


# --- the item page -------------------------------------------------------------------------------------


def test_a_tool_call_item_shows_the_proposal_conversation_state_and_run_progress(client, alice, posted):
    item = posted(email_with_proposal())[0]
    client.force_login(alice)
    page = client.get(f"/inbox/items/{item.pk}/").content.decode()
    assert '<code class="tool-name">sendEmail</code>' in page
    assert "&quot;subject&quot;: &quot;Hi&quot;" in page
    assert "Email a@b.com and say hi" in page
    assert "draftCount" in page
    assert "0 of 1 decided" in page
    assert "Approve with edits" in page
    assert f'data-live-page="item" data-item-id="{item.pk}" data-run-id="{item.run_id}"' in page
    assert 'id="live-notice"' in page and "data-decision-form" in page


def test_an_item_lists_the_other_interrupts_of_its_run(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    InboxItem.objects.filter(pk=items[2].pk).update(status="cancelled")
    client.force_login(alice)
    page = client.get(f"/inbox/items/{items[0].pk}/").content.decode()
    assert "1 of 3 decided" in page
    assert "the answers go back to the agent when all are decided" in page
    assert "y@z.com" in page and "z@w.com" in page


def test_a_custom_reason_renders_from_message_metadata_and_schema(client, alice, posted):
    item = posted(
        interrupt_run(
            "t-m",
            "r-m",
            [
                {
                    "id": "mig-1",
                    "reason": "acme:db_migration",
                    "message": "Apply migration 0042?",
                    "metadata": {"tables": ["orders_legacy"]},
                    "responseSchema": {
                        "type": "object",
                        "properties": {"window": {"type": "string", "title": "Window"}},
                        "required": ["window"],
                    },
                }
            ],
        )
    )[0]
    client.force_login(alice)
    response = client.get(f"/inbox/items/{item.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "acme:db_migration" in page and "Apply migration 0042?" in page and "orders_legacy" in page
    assert "data-django-jsonform" in page


def test_a_schema_django_jsonform_cannot_render_falls_back_to_the_json_editor(client, alice, posted):
    schema = {
        "$defs": {"step": {"type": "object"}},
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
        "required": ["steps"],
    }
    item = posted(
        interrupt_run(
            "t-r", "r-r", [{"id": "r-1", "reason": "input_required", "message": "Plan?", "responseSchema": schema}]
        )
    )[0]
    client.force_login(alice)
    page = client.get(f"/inbox/items/{item.pk}/").content.decode()
    assert "data-json-answer" in page and "data-django-jsonform" not in page
    refused = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "answer", "answer": '{"steps": 3}'})
    assert refused.status_code == 400
    assert "<code>steps</code>" in refused.content.decode()
    accepted = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "answer", "answer": '{"steps": [{}]}'})
    assert accepted.status_code == 302
    item.refresh_from_db()
    assert item.response_payload == {"steps": [{}]}


def test_everything_the_agent_sent_is_escaped(client, alice, posted):
    args = {"to": XSS}
    item = posted(
        interrupt_run(
            "t-x",
            "r-x",
            [
                {
                    "id": "x-1",
                    "reason": XSS,
                    "message": XSS,
                    "toolCallId": "tc-x",
                    "metadata": {"note": XSS},
                    "responseSchema": {
                        "type": "object",
                        "title": XSS,
                        "properties": {"approved": {"type": "boolean", "title": XSS}, "editedArgs": {"type": "object"}},
                        "required": ["approved"],
                    },
                }
            ],
            events=[
                {"type": "TOOL_CALL_START", "toolCallId": "tc-x", "toolCallName": XSS},
                {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-x", "delta": json.dumps(args)},
                {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m", "role": "user", "content": XSS}]},
            ],
        )
    )[0]
    client.force_login(alice)
    for url in (
        "/inbox/",
        "/inbox/?tab=all",
        f"/inbox/items/{item.pk}/",
        f"/inbox/runs/{item.run_id}/",
        f"/inbox/rows/?ids={item.pk}",
        f"/inbox/runs/{item.run_id}/live/",
    ):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page, url
        assert "<img src=x" not in page, url
        assert "&lt;script&gt;" in page or "&lt;img" in page, url


# --- deciding through the pages -------------------------------------------------------------------------


def test_approve_on_the_item_page_stores_the_decision_and_shows_it(client, alice, posted):
    item = posted(spec_example("minimal_tool_approval"))[0]
    client.force_login(alice)
    response = client.post(
        f"/inbox/items/{item.pk}/decide/", {"action": "approve", "comment": "looks right"}, follow=True
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Approved: “Send email to a@b.com with subject &#x27;Hi&#x27;?”." in page
    assert "looks right" in page
    decision = Decision.objects.get(item=item)
    assert (decision.user, decision.status, decision.payload, decision.comment) == (
        alice,
        "resolved",
        {"approved": True},
        "looks right",
    )


def test_deny_and_cancel_store_what_the_spec_says(client, alice, posted):
    first, second, _ = posted(spec_example("parallel_interrupts"))
    client.force_login(alice)
    client.post(f"/inbox/items/{first.pk}/decide/", {"action": "deny"})
    client.post(f"/inbox/items/{second.pk}/decide/", {"action": "cancel"})
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.response_payload) == ("resolved", {"approved": False})
    assert (second.status, second.response_payload) == ("cancelled", None)


def test_approve_with_edits_sends_the_edited_arguments_as_a_full_replacement(client, alice, posted):
    item = posted(email_with_proposal())[0]
    client.force_login(alice)
    edited = {"to": "a@b.com", "subject": "Hi", "body": "Hi (revised per my note)"}
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": json.dumps(edited)})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.response_payload == {"approved": True, "editedArgs": edited}


def test_edited_arguments_that_are_not_json_are_refused_next_to_the_editor(client, alice, posted):
    item = posted(email_with_proposal())[0]
    client.force_login(alice)
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": "{to: nope"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "<code>editedArgs</code> Not valid JSON" in page
    assert "{to: nope</textarea>" in page
    assert not Decision.objects.exists()


def test_a_pattern_error_says_the_fields_own_words_not_the_regex(client, alice, agent, ingest):
    """`'123' does not match '^[A-Z]{2}…$'` told a person nothing: the field's title and description do."""
    schema = {
        "type": "object",
        "properties": {
            "iban": {
                "type": "string",
                "title": "IBAN",
                "description": "two letters, then 8 to 12 letters or digits",
                "pattern": "^[A-Z]{2}[A-Z0-9]{8,12}$",
            }
        },
        "required": ["iban"],
    }
    run = {
        "type": "RUN_FINISHED",
        "threadId": "t-iban",
        "runId": "r-iban",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {"id": "iban-1", "reason": "input_required", "message": "Which account?", "responseSchema": schema}
            ],
        },
    }
    assert ingest(agent, run).status_code == 201
    item = InboxItem.objects.get(interrupt_id="iban-1")
    client.force_login(alice)
    response = client.post(
        f"/inbox/items/{item.pk}/decide/", {"action": "answer", "answer": json.dumps({"iban": "123"})}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Enter an IBAN: two letters, then 8 to 12 letters or digits." in page
    assert "does not match" not in page
    api = client.post(
        f"/api/v1/items/{item.pk}/decision",
        {"status": "resolved", "payload": {"iban": "123"}},
        content_type="application/json",
    )
    assert api.status_code == 400 and api.json()["errors"][0]["message"].startswith("Enter an IBAN")
    assert not Decision.objects.exists()


def test_a_form_answer_that_breaks_the_schema_is_refused_with_errors_by_field(client, alice, posted):
    item = posted(quarterly_filing())[0]
    client.force_login(alice)
    response = client.post(
        f"/inbox/items/{item.pk}/decide/",
        {"action": "answer", "answer": json.dumps({"quarter": "Q1", "year": 1999, "revenue": ""})},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Not saved: please fix the 2 problems marked below." in page
    # django-jsonform shows each error next to its input, from the errorMap it is given.
    assert "&quot;errorMap&quot;: {&quot;revenue&quot;: [&quot;This field is required.&quot;]" in page
    assert "&quot;year&quot;: [&quot;Year must be at least 2000.&quot;]" in page
    assert not Decision.objects.exists()
    accepted = client.post(
        f"/inbox/items/{item.pk}/decide/",
        {"action": "answer", "answer": json.dumps({"quarter": "Q1", "year": 2026, "revenue": 42})},
    )
    assert accepted.status_code == 302
    item.refresh_from_db()
    assert item.response_payload == {"quarter": "Q1", "year": 2026, "revenue": 42}


def test_a_confirmation_is_yes_or_no(client, alice, posted):
    item = posted(interrupt_run("t-c", "r-c", [{"id": "c-1", "reason": "confirmation", "message": "Restart?"}]))[0]
    client.force_login(alice)
    page = client.get(f"/inbox/items/{item.pk}/").content.decode()
    assert 'value="approve" class="btn btn-approve" data-action="approve">' in page
    assert "</svg>Yes</button>" in page and "</svg>No</button>" in page
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "approve"})
    item.refresh_from_db()
    assert item.response_payload == {"approved": True}


def test_deciding_an_item_someone_already_decided_shows_their_decision(client, alice, bob, posted):
    item = posted(spec_example("minimal_tool_approval"))[0]
    client.force_login(bob)
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"})
    client.force_login(alice)
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "approve"})
    assert response.status_code == 409
    page = response.content.decode()
    assert "already resolved" in page
    assert "bob" in page
    assert Decision.objects.count() == 1


# --- the run page ----------------------------------------------------------------------------------------


def test_the_run_page_decides_the_parallel_example_in_one_go(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    client.force_login(alice)
    page = client.get(f"/inbox/runs/{items[0].run_id}/").content.decode()
    assert page.count("data-run-item=") == 3
    assert 'id="resume-preview"' in page and "&quot;threadId&quot;: &quot;thread-3&quot;" in page
    response = client.post(
        f"/inbox/runs/{items[0].run_id}/decide/",
        {
            f"decision-{items[0].pk}": "approve",
            f"decision-{items[1].pk}": "approve",
            f"decision-{items[2].pk}": "cancel",
            "comment": "two of three",
        },
    )
    assert response.status_code == 302
    stored = {item.interrupt_id: (item.status, item.response_payload) for item in InboxItem.objects.all()}
    assert stored == {
        "i-1": ("resolved", {"approved": True}),
        "i-2": ("resolved", {"approved": True}),
        "i-3": ("cancelled", None),
    }
    assert set(Decision.objects.values_list("comment", flat=True)) == {"two of three"}


def test_the_run_page_stores_all_chosen_decisions_or_none(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    InboxItem.objects.filter(pk=items[1].pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    client.force_login(alice)
    response = client.post(
        f"/inbox/runs/{items[0].run_id}/decide/",
        {f"decision-{items[0].pk}": "approve", f"decision-{items[1].pk}": "approve"},
    )
    assert response.status_code == 409
    assert "i-2" in response.content.decode()
    assert not Decision.objects.exists()
    assert InboxItem.objects.get(pk=items[0].pk).status == "open"


def test_the_run_page_with_no_choice_made_says_so(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    client.force_login(alice)
    response = client.post(f"/inbox/runs/{items[0].run_id}/decide/", {})
    assert response.status_code == 400
    assert "Choose a decision for at least one interrupt." in response.content.decode()


def test_the_run_live_fragment_holds_the_resume_state_and_item_statuses(client, alice, posted):
    items = posted(spec_example("parallel_interrupts"))
    client.force_login(alice)
    html = client.get(f"/inbox/runs/{items[0].run_id}/live/").content.decode()
    assert 'id="resume-state"' in html and "Waiting for 3 decisions" in html
    assert 'id="resumed-events"' in html
    for item in items:
        assert f'data-item-status="{item.pk}"' in html


def test_the_thread_page_leads_to_the_thread_timeline(client, alice, posted):
    item = posted(spec_example("minimal_tool_approval"))[0]
    client.force_login(alice)
    response = client.get(f"/inbox/threads/{item.thread_id}/")
    assert response.status_code == 302
    assert response["Location"] == f"/audit/threads/{item.thread_id}/"


def test_the_run_page_shows_a_failed_resume_with_its_error_and_a_retry_for_staff_only(client, alice, staff, posted):
    from inbox.models import Resume

    items = posted(spec_example("parallel_interrupts"))
    run = items[0].run
    InboxItem.objects.filter(run=run).update(status="cancelled")
    Resume.objects.create(
        run=run,
        thread=run.thread,
        agent=run.agent,
        next_run_id="run-21",
        state="failed",
        attempts=6,
        last_error="connection refused",
        input={"threadId": "thread-3", "resume": []},
    )
    client.force_login(staff)
    page = client.get(f"/inbox/runs/{run.pk}/").content.decode()
    assert 'data-resume-state="failed"' in page
    assert "connection refused" in page and "run-21" in page
    assert f'hx-post="/api/v1/runs/{run.pk}/resume/retry"' in page
    client.force_login(alice)
    page = client.get(f"/inbox/runs/{run.pk}/").content.decode()
    assert "connection refused" in page
    assert "data-resume-retry" not in page


@pytest.mark.parametrize(
    ("reason", "schema", "control"),
    [
        ("tool_call", None, 'value="approve"'),
        ("confirmation", {"type": "boolean"}, 'value="approve"'),
        (
            "tool_call",
            {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}, "why": {"type": "string"}},
                "required": ["approved", "why"],
            },
            "data-django-jsonform",
        ),
        ("input_required", {"type": "string", "minLength": 3}, "data-question-answer"),  # free text: a question
        ("input_required", {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, "data-json-answer"),
        (
            "input_required",
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "data-json-answer",
        ),
        ("acme:anything", None, 'value="approve"'),
        ("acme:anything", {"type": "object", "properties": {"n": {"type": "integer"}}}, "data-django-jsonform"),
    ],
)
def test_each_reason_and_schema_gets_the_control_that_can_answer_it(client, alice, posted, reason, schema, control):
    interrupt = {"id": "q-1", "reason": reason, "message": "?", "toolCallId": "tc-1"}
    if schema is not None:
        interrupt["responseSchema"] = schema
    item = posted(interrupt_run("t-q", "r-q", [interrupt]))[0]
    client.force_login(alice)
    response = client.get(f"/inbox/items/{item.pk}/")
    assert response.status_code == 200
    assert control in response.content.decode()


def test_a_bare_boolean_schema_is_answered_with_a_bare_boolean(client, alice, posted):
    item = posted(
        interrupt_run(
            "t-b",
            "r-b",
            [{"id": "b-1", "reason": "confirmation", "message": "Sure?", "responseSchema": {"type": "boolean"}}],
        )
    )[0]
    client.force_login(alice)
    client.post(f"/inbox/items/{item.pk}/decide/", {"action": "deny"})
    item.refresh_from_db()
    assert (item.status, item.response_payload) == ("resolved", False)


def test_a_run_without_interrupts_shows_its_outcome_and_events(client, alice, agent, ingest):
    response = ingest(
        agent,
        {
            "events": [
                {"type": "RUN_STARTED", "threadId": "t-s", "runId": "r-s"},
                {"type": "TOOL_CALL_RESULT", "messageId": "m-9", "toolCallId": "tc-1", "content": "sent"},
                {
                    "type": "RUN_FINISHED",
                    "threadId": "t-s",
                    "runId": "r-s",
                    "outcome": {"type": "success"},
                    "result": {"ok": 1},
                },
            ]
        },
    )
    assert response.status_code == 201
    client.force_login(alice)
    page = client.get(f"/inbox/runs/{response.json()['id']}/").content.decode()
    assert "No interrupts" in page
    assert "TOOL_CALL_RESULT" in page and "&quot;ok&quot;: 1" in page
    assert "data-run-form" not in page


def test_a_schema_with_an_untyped_property_gets_the_json_editor(client, alice, posted):
    schema = {"type": "object", "properties": {"anything": {}, "n": {"type": "integer"}}}
    item = posted(
        interrupt_run(
            "t-u", "r-u", [{"id": "u-1", "reason": "input_required", "message": "?", "responseSchema": schema}]
        )
    )[0]
    client.force_login(alice)
    page = client.get(f"/inbox/items/{item.pk}/").content.decode()
    assert "data-json-answer" in page


def test_a_term_without_a_word_of_three_characters_is_looked_for_in_the_newest_items_only(
    client, alice, posted, monkeypatch
):
    """No index can look up a term of one or two letters, and matching it against every row grows with the table:
    it is looked for among the viewer's newest ``SEARCH_RECENT_ROWS`` items, and the page says so; a term with a
    longer word still searches them all."""
    monkeypatch.setattr("inbox.listing.selectors.SEARCH_RECENT_ROWS", 3)
    posted(interrupt_run("t-short-old", "r-1", [{"id": "z-1", "reason": "confirmation", "message": "zq refund"}]))
    posted(
        interrupt_run(
            "t-short-mid",
            "r-1",
            [{"id": f"n-{n}", "reason": "confirmation", "message": f"other {n}"} for n in range(3)],
        )
    )
    posted(interrupt_run("t-short-newest", "r-1", [{"id": "z-2", "reason": "confirmation", "message": "ZQ again"}]))
    client.force_login(alice)

    short = client.get("/inbox/", {"tab": "all", "q": "zq"})
    assert [item.message for item in short.context["items"]] == ["ZQ again"]  # the older one is past the newest 3
    notice = short.content.decode()
    assert "data-search-short" in notice and "in the newest 3 items only" in notice
    for literal in ("%", "_", "\\", "'"):  # taken literally: none of the newest texts holds them
        assert list(client.get("/inbox/", {"tab": "all", "q": literal}).context["items"]) == [], literal

    longer = client.get("/inbox/", {"tab": "all", "q": "zq refund"})
    assert [item.message for item in longer.context["items"]] == ["zq refund"]
    assert "data-search-short" not in longer.content.decode()
    assert 'data-count="all">1</span>' in longer.content.decode()
