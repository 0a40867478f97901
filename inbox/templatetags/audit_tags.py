"""The item page's provenance card: the item's audit events and their place in the audit chain."""

from __future__ import annotations

from typing import Any

from django import template

from inbox.audit.provenance import item_provenance
from inbox.models import InboxItem

register = template.Library()


@register.inclusion_tag("audit/_item_provenance.html")
def item_provenance_card(item: InboxItem) -> dict[str, Any]:
    provenance = item_provenance(item)
    return {"item": item, "events": provenance.events, "chain": provenance.chain, "seen": provenance.seen}
