"""Recording that a person was shown an item (``ItemSeen``): one INSERT that does nothing when they saw it before."""

from __future__ import annotations

from typing import Any

from inbox.models import ItemSeen


def record_seen(*, item_id: int, user: Any) -> None:
    """The first time ``user`` is shown the item stays; later showings change nothing (ON CONFLICT DO NOTHING)."""
    if not user.is_authenticated:
        return
    ItemSeen.objects.bulk_create([ItemSeen(item_id=item_id, user_id=user.pk)], ignore_conflicts=True)
