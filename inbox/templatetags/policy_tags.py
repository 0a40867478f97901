"""``{% item_policies item %}``: what auto-decision policies did, or would have done, with an item;
``schema|schema_clauses``: a policy's match schema in words."""

from __future__ import annotations

from typing import Any

from django import template

from inbox.models import InboxItem
from inbox.policies.selectors import item_policy_notes
from inbox.policies.words import Clause, clauses

register = template.Library()


@register.inclusion_tag("policies/_item_policies.html")
def item_policies(item: InboxItem) -> dict:
    return {"policy_notes": item_policy_notes(item)}


@register.filter
def schema_clauses(schema: Any) -> list[Clause]:
    return clauses(schema)
