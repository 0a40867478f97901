"""A backlog is visible: when answers wait behind others to be sent, the item, run and agent pages and the API say how
many are ahead, in words, instead of "Queued" for as long as it takes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import Resume
from tests.factories import interrupted_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def backlog(agent, alice, settings) -> list[Resume]:
    """Three decided runs whose answers are due and wait (no worker takes them), the newest last."""
    settings.INBOX_UNDO_SECONDS = 0
    resumes = []
    for index in range(3):
        run = interrupted_run(agent.agent, f"behind-{index}", f"run-{index}", 60)
        decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
        resume = Resume.objects.get(run=run)
        Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=16 - index))
        resumes.append(resume)
    return resumes


def test_the_pages_and_the_api_say_how_many_answers_wait_ahead(backlog, alice):
    client = Client()
    client.force_login(alice)
    last = backlog[-1]
    item = last.run.items.get()

    delivery = client.get(f"/api/v1/items/{item.pk}").json()["delivery"]
    assert (delivery["state"], delivery["ahead"], delivery["label"]) == ("queued", 2, "Waiting to send: 2 ahead")
    assert delivery["sentence"].startswith("Delivery is behind: 2 answers due before this one wait to be sent first")
    assert client.get(f"/api/v1/runs/{last.run_id}").json()["delivery"]["ahead"] == 2

    for page in (item.get_absolute_url(), last.run.get_absolute_url(), f"/agents/{last.agent.slug}/"):
        html = client.get(page).content.decode()
        assert "Waiting to send: 2 ahead" in html, page

    # The first in line has nothing ahead: queued, as ever.
    first = client.get(f"/api/v1/items/{backlog[0].run.items.get().pk}").json()["delivery"]
    assert (first["label"], first["ahead"]) == ("Queued", 0)


def test_an_answer_held_for_its_undo_window_is_not_behind(agent, alice, settings):
    settings.INBOX_UNDO_SECONDS = 10
    run = interrupted_run(agent.agent, "held", "run-held", 60)
    decision_submit(
        item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True}, undoable=True
    )
    client = Client()
    client.force_login(alice)
    delivery = client.get(f"/api/v1/items/{run.items.get().pk}").json()["delivery"]
    assert delivery["state"] == "queued" and delivery["ahead"] is None and delivery["label"] == "Queued"
