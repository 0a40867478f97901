"""Bounded counts and index skip-scans on tables that grow without end (inbox.core.paging)."""

from __future__ import annotations

import pytest

from inbox.core.paging import AtLeast, BoundedPaginator, bounded_count, distinct_values
from inbox.models import AuditEvent

pytestmark = pytest.mark.django_db


def events(verbs: list[str]) -> None:
    for n, verb in enumerate(verbs):
        AuditEvent.objects.create(actor_type="system", actor_label="system", verb=verb, object_type="x", object_id=n)


def test_a_count_past_its_bound_stops_there_and_says_so():
    events(["a"] * 5)
    assert bounded_count(AuditEvent.objects.all(), 10) == 5 and not isinstance(
        bounded_count(AuditEvent.objects.all(), 10), AtLeast
    )
    capped = bounded_count(AuditEvent.objects.all(), 3)
    assert isinstance(capped, AtLeast) and capped == 3 and str(capped) == "3+"
    assert str(AtLeast(10_000)) == "10,000+"


def test_a_bounded_paginator_ends_at_its_bound():
    events(["a"] * 7)
    paginator = BoundedPaginator(AuditEvent.objects.order_by("pk"), 2, bound=4)
    assert str(paginator.count) == "4+" and paginator.num_pages == 2
    assert len(paginator.get_page(99).object_list) == 2  # past the end: the last page within the bound


def test_distinct_values_lists_each_value_once_in_order_within_the_filter_and_the_limit():
    events(["item.decided", "run.ingested", "item.decided", "item.claimed", "run.ingested", "zz.other"])
    assert distinct_values(AuditEvent.objects.all(), "verb", limit=10) == [
        "item.claimed",
        "item.decided",
        "run.ingested",
        "zz.other",
    ]
    assert distinct_values(AuditEvent.objects.exclude(verb="item.decided"), "verb", limit=2) == [
        "item.claimed",
        "run.ingested",
    ]
    assert distinct_values(AuditEvent.objects.none(), "verb", limit=10) == []
