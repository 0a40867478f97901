"""``{% item_policies item %}``: what auto-decision policies did, or would have done, with an item."""

from __future__ import annotations

from django import template

from inbox.models import InboxItem
from inbox.policies.selectors import item_policy_notes

register = template.Library()


@register.inclusion_tag("policies/_item_policies.html")
def item_policies(item: InboxItem) -> dict:
    return {"policy_notes": item_policy_notes(item)}
