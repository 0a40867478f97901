"""``{% item_team_notes item %}``: who was added to an item's deciders, and why (escalations, delegation)."""

from __future__ import annotations

from django import template

from inbox.models import InboxItem
from inbox.teams.away import away_status_of
from inbox.teams.selectors import item_team_notes as notes_of

register = template.Library()


@register.inclusion_tag("inbox/_team_notes.html")
def item_team_notes(item: InboxItem) -> dict:
    return notes_of(item)


@register.inclusion_tag("inbox/_away_banner.html", takes_context=True)
def away_banner(context) -> dict:
    """The signed-in person's away status, in force or to come: a banner on every page."""
    request = context.get("request")
    user = getattr(request, "user", None)
    away = away_status_of(user) if user is not None and user.is_authenticated else None
    return {"away": away, "away_now": away is not None and away.in_force()}
