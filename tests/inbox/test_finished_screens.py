"""Small things that looked broken (issue 34.7): one menu item current per page, flashes that name the item by
what it asks, an expired marker drawn with an icon that ships with the page."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.test import Client

from inbox.models import InboxItem
from tests.conftest import spec_example


def test_the_notifications_page_marks_one_menu_item_current(client: Client, alice) -> None:
    client.force_login(alice)
    html = client.get("/inbox/settings/notifications/").content.decode()
    current = re.findall(r'<a [^>]*aria-current="page"[^>]*>([^<]+)</a>', html)
    assert current == ["Notifications"]


def test_a_decision_flash_names_the_item_by_its_message_not_its_id(client: Client, alice, agent, ingest) -> None:
    body = spec_example("minimal_tool_approval")
    body["outcome"]["interrupts"][0]["message"] = "Refund order 1042?"
    ingest(agent, body)
    client.force_login(alice)
    item = InboxItem.objects.get()
    page = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "approve"}, follow=True).content.decode()
    flash = re.search(r'<div class="flash flash-success"[^>]*>([^<]*)</div>', page)
    assert flash is not None and flash.group(1) == "Approved: “Refund order 1042?”."


def test_the_expired_marker_is_an_icon_of_the_page_not_a_font_glyph() -> None:
    css = (Path(settings.BASE_DIR) / "static/css/app.css").read_text()
    assert "\\231B" not in css
    assert 'url("../img/hourglass.svg")' in css
    assert (Path(settings.BASE_DIR) / "static/img/hourglass.svg").is_file()
