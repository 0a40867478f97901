"""The list's split view on the server: the pane is the item page's body (no query more than the page), the list
with an item beside it costs the same for 3 rows as for 50, deciding on to a pane fetched ahead answers with words
and where to go, and the page's socket names the item it shows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inbox.models import InboxItem
from inbox.web.fragments import LiveView
from tests.inbox.conftest import interrupt_run

PANE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "split-pane"}


@pytest.fixture
def items(agent, ingest) -> list[InboxItem]:
    def post(thread: str, count: int) -> list[InboxItem]:
        body = interrupt_run(
            thread,
            f"r-{thread}",
            [{"id": f"{thread}-{n}", "reason": "confirmation", "message": f"Go {n}?"} for n in range(count)],
        )
        response = ingest(agent, body)
        assert response.status_code == 201, response.content
        return list(InboxItem.objects.filter(run_id=response.json()["id"]).order_by("position"))

    return post


def _queries(client, path: str, **headers) -> tuple[int, str]:
    client.get(path, **headers)  # the session and the caches of a first request
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, **headers)
        html = response.content.decode()
    assert response.status_code == 200, html[:400]
    return len(captured), html


def test_the_pane_is_the_item_pages_body_and_reads_no_more_than_the_page(client, alice, items):
    first, second = items("t-a", 2)
    client.force_login(alice)
    client.get("/inbox/")  # the list the item's next and previous follow
    page_queries, page = _queries(client, first.get_absolute_url())
    pane_queries, pane = _queries(client, first.get_absolute_url(), **PANE)
    assert pane_queries <= page_queries
    assert "<html" not in pane and "<html" in page
    assert f'data-pane-item data-item-id="{first.pk}"' in pane
    assert f'data-split-url="/inbox/?item={first.pk}"' in pane
    assert f'data-live-query="view=list&amp;item={first.pk}&amp;status=open"' in pane
    # The same parts as the page: its heading, its decision form, its next item.
    for part in ('id="item-heading"', "data-decision-form", f'href="/inbox/items/{second.pk}/" rel="next"'):
        assert part in pane and part in page
    response = client.get(first.get_absolute_url(), **PANE)
    assert "HX-Target" in response["Vary"]


def test_the_split_view_reads_as_much_for_fifty_rows_as_for_three(client, alice, items):
    client.force_login(alice)
    few = items("t-few", 3)
    small, html = _queries(client, f"/inbox/?item={few[0].pk}")
    assert 'id="split-pane"' in html and f'data-pane-item data-item-id="{few[0].pk}"' in html
    items("t-many", 60)
    large, html = _queries(client, f"/inbox/?item={few[0].pk}")
    assert html.count("data-item-row ") == 50
    assert large == small


def test_an_item_the_user_may_not_see_leaves_the_pane_empty(client, carol, items):
    (item,) = items("t-hidden", 1)
    client.force_login(carol)
    _count, html = _queries(client, f"/inbox/?item={item.pk}")
    assert "data-pane-item" not in html and "data-split-empty" in html


def _decide_in_pane(client, item: InboxItem, action: str, *, ahead: InboxItem):
    """The split view's decision: the pane's form, posted with the pane fetched ahead named."""
    data = {"action": action, "then": "next", "then_shown": "1"}
    return client.post(f"/inbox/items/{item.pk}/decide/", data, HTTP_X_PANE_AHEAD=str(ahead.pk), **PANE)


def test_deciding_on_to_a_pane_fetched_ahead_answers_with_the_words_and_where_it_is(client, alice, items):
    first, second, third = items("t-d", 3)
    client.force_login(alice)
    client.get("/inbox/")
    response = _decide_in_pane(client, first, "approve", ahead=second)
    assert response.status_code == 200
    assert response["X-Pane-Next"] == f"/inbox/items/{second.pk}/?after={first.run_id}"
    assert "Approved: “Go 0?”." in response.content.decode()
    assert InboxItem.objects.get(pk=first.pk).status == "resolved"
    # Another pane fetched ahead than the one it goes on to: the item page's redirect, which the pane follows.
    response = _decide_in_pane(client, second, "deny", ahead=first)
    assert response.status_code == 302
    assert response["Location"] == f"/inbox/items/{third.pk}/?after={second.run_id}"


def test_a_decision_sent_behind_the_pane_already_shown_answers_with_its_words_or_the_item_refused(
    client, alice, bob, items
):
    first, second, third = items("t-s", 3)
    client.force_login(alice)
    client.get("/inbox/")
    data = {"action": "deny", "then": "next", "then_shown": "1"}
    # The split view showed the item it went on to before sending the decision: the words, where it is, nothing more.
    response = client.post(f"/inbox/items/{first.pk}/decide/", data, HTTP_X_PANE_SHOWN=str(third.pk), **PANE)
    assert response.status_code == 200
    assert response["X-Pane-Next"] == f"/inbox/items/{third.pk}/?after={first.run_id}"
    assert "Denied: “Go 0?”." in response.content.decode()
    assert "data-pane-item" not in response.content.decode()
    assert InboxItem.objects.get(pk=first.pk).status == "resolved"
    # Refused (decided meanwhile): the item's pane with the reason, which the split view brings back.
    response = client.post(f"/inbox/items/{first.pk}/decide/", data, HTTP_X_PANE_SHOWN=str(second.pk), **PANE)
    assert response.status_code == 409
    html = response.content.decode()
    assert f'data-pane-item data-item-id="{first.pk}"' in html and "data-decision-error" in html
    assert "X-Pane-Next" not in response
    # A shown id that is no id is ignored: the page's usual redirect.
    response = client.post(f"/inbox/items/{second.pk}/decide/", data, HTTP_X_PANE_SHOWN="x", **PANE)
    assert response.status_code == 302


def test_the_split_views_socket_follows_its_item_and_refuses_a_bad_one():
    view = LiveView.parse("view=list&tab=open&item=12&status=open")
    assert (view.kind, view.pk, view.subscription) == ("list", 12, ("item", 12))
    assert LiveView.parse("view=list&tab=open").subscription is None
    # The chain's follow-up is followed at once on the item page reached by deciding, never in the pane (issue 48).
    assert LiveView.parse("view=item&item=12&after=3&chain=1").follows_chain
    assert not LiveView.parse("view=list&item=12&after=3&chain=1").follows_chain
    with pytest.raises(ValueError, match="item: the numeric id"):
        LiveView.parse("view=list&item=x")
