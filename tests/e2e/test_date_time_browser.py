"""A ``format: date-time`` field (django-jsonform's date and time boxes): no time is shown while the date is empty,
since the field then sends nothing; once a date is chosen the time it will send shows, and the answer carries it."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import InboxItem
from tests.e2e.conftest import item_page

pytestmark = pytest.mark.browser


@pytest.fixture
def maintenance(live_asgi, agent) -> InboxItem:
    response = httpx.post(
        f"{live_asgi}/api/v1/runs",
        headers={"Authorization": f"Bearer {agent.token}"},
        json={
            "type": "RUN_FINISHED",
            "threadId": "t-when",
            "runId": "r-when",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "when-1",
                        "reason": "input_required",
                        "message": "When should the maintenance start?",
                        "expiresAt": (timezone.now() + timedelta(hours=1)).isoformat(),
                        "responseSchema": {
                            "type": "object",
                            "properties": {"start": {"type": "string", "format": "date-time", "title": "Start"}},
                            "required": ["start"],
                        },
                    }
                ],
            },
        },
    )
    assert response.status_code == 201, response.text
    return InboxItem.objects.get(interrupt_id="when-1")


def test_no_time_shows_until_a_date_is_chosen(login, alice, maintenance):
    page = login(alice)
    page.goto(item_page(maintenance))
    date = page.get_by_label("Start, date")
    time = page.get_by_label("Start, time")
    expect(date).to_have_value("")
    expect(time).to_have_value("")
    expect(time).to_have_attribute("placeholder", "Choose a date first")

    date.fill("2027-01-15")
    expect(time).to_have_value("12:00:00 am")
    date.fill("")
    expect(time).to_have_value("")
    date.fill("2027-01-15")
    expect(time).to_have_value("12:00:00 am")

    page.locator('[data-decision-form] button[data-action="answer"]').click()
    page.wait_for_url(f"**{maintenance.get_absolute_url()}*")
    decided = InboxItem.objects.get(pk=maintenance.pk)
    assert decided.status == "resolved"
    assert decided.response_payload["start"].startswith("2027-01-1")
