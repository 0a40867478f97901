"""Saved views: the list's filters and sort under a name, per person, shared with a team by staff; tabs with
bounded counts; rename and delete; the API, and ``GET /api/v1/items?view=``."""

from __future__ import annotations

import re

import pytest

from inbox.models import InboxItem, Run, SavedView
from tests.inbox.conftest import interrupt_run


@pytest.fixture
def posted(agent, ingest, make_agent):
    """Three open confirmations from 'mailer' and two tool calls from 'filer'; returns them by agent."""
    mailer = ingest(agent, interrupt_run("t-m", "r-m", [{"id": f"m-{n}", "reason": "confirmation"} for n in range(3)]))
    filer_agent = make_agent("filer")
    filer = ingest(
        filer_agent,
        interrupt_run(
            "t-f", "r-f", [{"id": f"f-{n}", "reason": "tool_call", "toolCallId": f"tc-{n}"} for n in range(2)]
        ),
    )
    return {
        "mailer": list(Run.objects.get(pk=mailer.json()["id"]).items.order_by("pk")),
        "filer": list(Run.objects.get(pk=filer.json()["id"]).items.order_by("pk")),
    }


def _rows(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-item-row data-item-id="(\d+)"', html)]


def _view_tabs(html: str) -> dict[str, str]:
    """The view tabs: name -> count."""
    return dict(
        re.findall(
            r'data-view-tab="\d+"[^>]*>\s*([^<]+?)\s*(?:<span class="tab-shared">[^<]*</span>\s*)?<span class="count"[^>]*>([^<]*)<',
            html,
        )
    )


def test_saving_the_lists_filters_makes_a_tab_that_shows_the_same_rows(client, alice, posted):
    client.force_login(alice)
    query = "tab=open&reason=tool_call&sort=oldest"
    listed = _rows(client.get(f"/inbox/?{query}").content.decode())
    assert listed == [item.pk for item in posted["filer"]]

    response = client.post("/inbox/views/", {"name": "  Tool   calls ", "query": query + "&page=3&junk=1"})
    assert response.status_code == 302
    view = SavedView.objects.get()
    assert view.name == "Tool calls" and view.owner == alice
    assert view.query == "reason=tool_call&sort=oldest"  # the list's own query string: defaults and junk dropped
    assert response["Location"] == f"/inbox/?{view.query}"

    page = client.get(response["Location"]).content.decode()
    assert _rows(page) == listed
    assert _view_tabs(page) == {"Tool calls": "2"}
    assert re.search(rf'data-view-tab="{view.pk}" class="tab is-active" aria-current="true"', page)
    # On another list the tab is there, counted, not current.
    other = client.get("/inbox/").content.decode()
    assert _view_tabs(other) == {"Tool calls": "2"}
    assert "is-active" not in re.search(rf'data-view-tab="{view.pk}"[^>]*', other).group(0)


def test_views_are_per_person_and_staff_share_one_with_a_team(client, alice, bob, staff, team, carol, posted):
    client.force_login(alice)
    client.post("/inbox/views/", {"name": "Mine", "query": "reason=confirmation"})
    client.force_login(bob)
    assert _view_tabs(client.get("/inbox/").content.decode()) == {}

    client.force_login(staff)
    client.post("/inbox/views/", {"name": "Team tools", "query": "reason=tool_call"})
    shared = SavedView.objects.get(name="Team tools")
    assert client.post(f"/inbox/views/{shared.pk}/", {"team": team.name, "share": "1"}).status_code == 302
    client.force_login(bob)
    page = client.get("/inbox/").content.decode()
    assert _view_tabs(page) == {"Team tools": "2"}
    # A member uses it but may not change it.
    assert client.post(f"/inbox/views/{shared.pk}/", {"name": "Mine now"}).status_code == 403
    assert client.post(f"/inbox/views/{shared.pk}/delete/").status_code == 403
    # Someone outside the team does not see it at all.
    client.force_login(carol)
    assert client.post(f"/inbox/views/{shared.pk}/delete/").status_code == 404
    # Only staff share.
    client.force_login(alice)
    mine = SavedView.objects.get(name="Mine")
    response = client.post(f"/inbox/views/{mine.pk}/", {"team": team.name, "share": "1"})
    assert response.status_code == 403 and "only staff share views" in response.content.decode()


def test_rename_and_delete_with_clear_errors(client, alice, posted):
    client.force_login(alice)
    client.post("/inbox/views/", {"name": "First", "query": "reason=tool_call"})
    client.post("/inbox/views/", {"name": "Second", "query": "agent=filer"})
    first, second = SavedView.objects.order_by("pk")

    response = client.post("/inbox/views/", {"name": "First", "query": ""})
    assert response.status_code == 409
    assert "You already have a view named “First”" in response.content.decode()
    response = client.post("/inbox/views/", {"name": "   ", "query": ""})
    assert response.status_code == 400 and "Give the view a name" in response.content.decode()
    response = client.post("/inbox/views/", {"name": "x" * 61, "query": ""})
    assert response.status_code == 400 and "at most 60 characters" in response.content.decode()

    response = client.post(f"/inbox/views/{second.pk}/", {"name": "First"})
    assert response.status_code == 409 and f'id="view-error-{second.pk}"' in response.content.decode()
    assert client.post(f"/inbox/views/{second.pk}/", {"name": "Filer"}).status_code == 302
    assert _view_tabs(client.get("/inbox/").content.decode()) == {"First": "2", "Filer": "2"}
    assert client.post(f"/inbox/views/{first.pk}/delete/").status_code == 302
    assert _view_tabs(client.get("/inbox/").content.decode()) == {"Filer": "2"}
    assert client.get("/inbox/views/").status_code == 200


def test_the_api_saves_lists_renames_deletes_and_filters_items_by_a_view(client, alice, bob, staff, team, posted):
    client.force_login(alice)
    created = client.post(
        "/api/v1/views", {"name": "Oldest mail", "query": "agent=mailer&sort=oldest"}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    view = created.json()
    assert view["query"] == "agent=mailer&sort=oldest" and view["team"] is None
    assert "agent mailer" in view["description"]

    items = client.get(f"/api/v1/items?view={view['id']}").json()["results"]
    assert [item["id"] for item in items] == [item.pk for item in posted["mailer"]]  # the view's order: oldest first
    narrowed = client.get(f"/api/v1/items?view={view['id']}&reason=tool_call").json()["results"]
    assert narrowed == []
    InboxItem.objects.filter(pk=posted["mailer"][0].pk).update(status="resolved")
    assert len(client.get(f"/api/v1/items?view={view['id']}").json()["results"]) == 2  # the Open tab's rows

    for bad, field in (({"name": ""}, "name"), ({"name": 5}, "name"), ({"name": "n", "query": 7}, "query")):
        response = client.post("/api/v1/views", bad, content_type="application/json")
        assert response.status_code == 400 and response.json()["field"] == field, bad
    duplicate = client.post("/api/v1/views", {"name": "Oldest mail"}, content_type="application/json")
    assert duplicate.status_code == 409 and duplicate.json()["field"] == "name"
    refused = client.post("/api/v1/views", {"name": "Shared", "team": team.name}, content_type="application/json")
    assert refused.status_code == 403 and refused.json()["field"] == "team"

    renamed = client.patch(f"/api/v1/views/{view['id']}", {"name": "Mail"}, content_type="application/json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Mail"
    assert [v["name"] for v in client.get("/api/v1/views").json()] == ["Mail"]

    client.force_login(bob)
    response = client.get(f"/api/v1/items?view={view['id']}")
    assert response.status_code == 400 and response.json()["field"] == "view"
    assert client.get(f"/api/v1/views/{view['id']}").status_code == 404
    assert client.get("/api/v1/items?view=x").status_code == 400

    client.force_login(staff)
    assert (
        client.patch(f"/api/v1/views/{view['id']}", {"team": team.name}, content_type="application/json").status_code
        == 404
    )
    team_view = client.post(
        "/api/v1/views", {"name": "Team mail", "query": "agent=mailer"}, content_type="application/json"
    )
    shared = client.patch(
        f"/api/v1/views/{team_view.json()['id']}", {"team": team.name}, content_type="application/json"
    )
    assert shared.status_code == 200 and shared.json()["team"] == team.name
    client.force_login(bob)
    assert len(client.get(f"/api/v1/items?view={team_view.json()['id']}").json()["results"]) == 2
    assert client.delete(f"/api/v1/views/{team_view.json()['id']}").status_code == 403
    client.force_login(alice)
    assert [v["name"] for v in client.get("/api/v1/views").json()] == ["Mail", "Team mail"]  # her own first
    assert client.delete(f"/api/v1/views/{view['id']}").status_code == 204
    assert list(SavedView.objects.values_list("name", flat=True)) == ["Team mail"]


def test_a_snoozed_item_leaves_the_views_of_the_open_tab_too(client, alice, posted):
    client.force_login(alice)
    client.post("/inbox/views/", {"name": "Mail", "query": "agent=mailer"})
    client.post(f"/inbox/items/{posted['mailer'][0].pk}/snooze/", {"until": "1h"})
    assert _view_tabs(client.get("/inbox/").content.decode()) == {"Mail": "2"}


def test_the_views_count_the_same_while_the_list_shows_a_search(client, alice, posted):
    client.force_login(alice)
    client.post("/inbox/views/", {"name": "Mail", "query": "agent=mailer"})
    client.post("/inbox/views/", {"name": "Found", "query": "tab=all&q=t-f"})
    expected = {"Mail": "3", "Found": "2"}
    assert _view_tabs(client.get("/inbox/").content.decode()) == expected
    searching = client.get("/inbox/?tab=all&q=t-").content.decode()
    assert _view_tabs(searching) == expected
    assert _view_tabs(client.get("/inbox/?agent=filer").content.decode()) == expected


def test_the_list_runs_the_same_queries_with_views_however_many(client, alice, posted, django_assert_num_queries):
    """Reading the views is one query (with none too); they are counted with the tabs; a snooze adds none."""
    client.force_login(alice)
    client.post(f"/inbox/items/{posted['mailer'][0].pk}/snooze/", {"until": "1h"})
    with django_assert_num_queries(7):  # session, user and away status, teams and agents, the views, the list's 3
        client.get("/inbox/").content  # noqa: B018
    client.post("/inbox/views/", {"name": "One", "query": "agent=mailer"})
    with django_assert_num_queries(7):
        client.get("/inbox/").content  # noqa: B018
    for n in range(5):
        client.post("/inbox/views/", {"name": f"V{n}", "query": f"reason=tool_call&sort={['oldest', 'newest'][n % 2]}"})
    client.post(f"/inbox/items/{posted['filer'][0].pk}/snooze/", {"until": "1h"})
    with django_assert_num_queries(7):
        client.get("/inbox/?tab=snoozed").content  # noqa: B018
