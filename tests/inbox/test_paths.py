"""``id_path``: an object page's path without ``reverse`` on every call, the same text ``reverse`` gives."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, reverse, set_script_prefix

from inbox.core import paths
from inbox.core.paths import id_path
from tests.factories import InboxItemFactory


@pytest.fixture(autouse=True)
def _fresh_routes():
    paths._routes.clear()
    yield
    paths._routes.clear()
    set_script_prefix("/")


@pytest.mark.parametrize("name", ["inbox:item", "inbox:run", "inbox:thread", "inbox:item_decide", "inbox:policy"])
@pytest.mark.parametrize("pk", [0, 1, 42, 10**18 - 1])
def test_the_path_is_the_one_reverse_gives(name: str, pk: int) -> None:
    assert id_path(name, pk) == reverse(name, args=[pk])
    assert id_path(name, pk) == reverse(name, args=[pk])  # the second call from the kept text


def test_a_script_prefix_is_kept_apart() -> None:
    assert id_path("inbox:item", 7) == "/inbox/items/7/"
    set_script_prefix("/approvals/")
    assert id_path("inbox:item", 7) == "/approvals/inbox/items/7/" == reverse("inbox:item", args=[7])


@pytest.mark.parametrize("pk", [10**18, -1, "12", True, 3.0])
def test_what_it_cannot_vouch_for_goes_through_reverse_unchanged(pk) -> None:
    try:
        expected = reverse("inbox:item", args=[pk])
    except NoReverseMatch:
        with pytest.raises(NoReverseMatch):
            id_path("inbox:item", pk)
    else:
        assert id_path("inbox:item", pk) == expected


def test_a_route_whose_argument_is_not_an_id_is_always_reversed() -> None:
    # The agent page takes a slug: a number is a valid slug, but the route is no id route, so nothing is kept.
    assert id_path("agents:detail", 5) == reverse("agents:detail", args=[5]) == "/agents/5/"
    assert list(paths._routes.values()) == [None]


@pytest.mark.django_db
def test_the_models_use_it() -> None:
    item = InboxItemFactory()
    assert item.get_absolute_url() == reverse("inbox:item", args=[item.pk])
    assert item.run.get_absolute_url() == reverse("inbox:run", args=[item.run.pk])
    assert item.thread.get_absolute_url() == reverse("inbox:thread", args=[item.thread.pk])
