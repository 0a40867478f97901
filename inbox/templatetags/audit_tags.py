"""The item page's Audit record card: closed, it costs no query; its events are read when it is opened
(``inbox:item_provenance``)."""

from __future__ import annotations

from typing import Any

from django import template

from inbox.models import InboxItem

register = template.Library()


@register.inclusion_tag("audit/_item_provenance_card.html")
def item_provenance_card(item: InboxItem) -> dict[str, Any]:
    return {"item": item}
