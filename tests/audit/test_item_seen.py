"""When a person is first shown an item, for review quality: the item page, the list's split view (its pane, or
the list opened on an item) and a pane fetched ahead once it is shown each record it once per person; later
showings do not move it, a pane fetched ahead is not shown yet, and an item the person may not see records
nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.models import ItemSeen
from tests.factories import InboxItemFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(agent):
    return InboxItemFactory(run=RunFactory(agent=agent.agent))


def seen(item, user):
    return list(ItemSeen.objects.filter(item=item, user=user).values_list("first_seen_at", flat=True))


def test_the_item_page_records_the_first_showing_only(client, alice, bob, item) -> None:
    client.force_login(alice)
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 200
    [first] = seen(item, alice)
    assert timezone.now() - first < timedelta(minutes=1)
    ItemSeen.objects.filter(item=item, user=alice).update(first_seen_at=first - timedelta(hours=1))
    client.get(f"/inbox/items/{item.pk}/")
    assert seen(item, alice) == [first - timedelta(hours=1)]  # the first showing stays
    assert seen(item, bob) == []
    client.force_login(bob)
    client.get(f"/inbox/items/{item.pk}/")
    assert len(seen(item, bob)) == 1


def test_the_split_view_records_what_it_shows_not_what_it_fetches_ahead(client, alice, item) -> None:
    client.force_login(alice)
    ahead = client.get(f"/inbox/items/{item.pk}/", headers={"HX-Target": "split-pane", "X-Pane-Prefetch": "1"})
    assert ahead.status_code == 200 and "data-pane-item" in ahead.content.decode()
    assert seen(item, alice) == []
    assert client.post(f"/inbox/items/{item.pk}/seen/").status_code == 204  # split.js: the pane is shown now
    assert len(seen(item, alice)) == 1

    other = InboxItemFactory(run=item.run, position=5)
    client.get(f"/inbox/items/{other.pk}/", headers={"HX-Target": "split-pane"})
    assert len(seen(other, alice)) == 1
    third = InboxItemFactory(run=item.run, position=6)
    assert client.get("/inbox/", {"item": third.pk}).status_code == 200  # the list opened on an item
    assert len(seen(third, alice)) == 1


def test_an_item_the_person_may_not_see_records_nothing(client, carol, item) -> None:
    client.force_login(carol)
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 404
    assert client.post(f"/inbox/items/{item.pk}/seen/").status_code == 404
    assert client.get("/inbox/", {"item": item.pk}).status_code == 200
    assert client.get(f"/inbox/items/{item.pk}/seen/").status_code == 405
    assert not ItemSeen.objects.exists()
