"""Words people read, not data (issue 48, point 7): what the pages say, read as a person reads them."""

from __future__ import annotations

import re

from tests.factories import UserFactory


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


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
