"""Where a newcomer looks (the README, docs/teams.md, the empty inbox), adding a second person and a team is
explained, and the pages it names exist."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.factories import UserFactory


def test_a_staff_members_empty_inbox_says_how_to_add_a_colleague_and_a_team(client, staff):
    client.force_login(staff)
    page = client.get("/inbox/").content.decode()

    assert "Add a colleague and a team" in page
    links = re.findall(r'href="(/admin/auth/(?:group|user)/add/)"', page)
    assert links == ["/admin/auth/group/add/", "/admin/auth/user/add/"]
    assert all(client.get(link).status_code == 200 for link in links)


def test_an_approver_in_no_team_is_told_why_nothing_reaches_them(client, alice, db):
    loner = UserFactory(username="loner", teams=[])
    client.force_login(loner)
    page = client.get("/inbox/").content.decode()
    assert "You are in no team yet" in page and "Add a colleague" not in page

    client.force_login(alice)  # in a team: nothing to say
    assert "You are in no team yet" not in client.get("/inbox/").content.decode()


def test_the_readme_and_the_teams_page_walk_through_adding_a_person_and_a_team():
    readme = (ROOT / "README.md").read_text()
    teams = (ROOT / "docs" / "teams.md").read_text()
    assert "Add a second person and a team" in readme
    assert "## Adding a person and a team" in teams
    for text in (readme, teams):
        assert "*Add group*" in text and "*Add user*" in text and "Settings → Teams" in text
