"""How a request reads its signed-in user: with their away status and its delegate, in the same query, for the
banner every page shows (``inbox.teams.away.away_status_of``), and whether they lead a team (the menu)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db.models import Exists, OuterRef, QuerySet

from inbox.models import TeamLead


def signed_in(users: QuerySet) -> QuerySet:
    """``users`` read as a request reads the signed-in one (``get_user`` of the authentication backends), with
    ``leads_teams``: whether they lead a team, for the Policies link every page's menu shows to leads."""
    leads = Exists(TeamLead.objects.filter(user_id=OuterRef("pk")))
    return users.select_related("inbox_away__delegate").annotate(leads_teams=leads)


class PasswordBackend(ModelBackend):
    """Django's username and password login."""

    def get_user(self, user_id: Any):
        try:
            user = signed_in(get_user_model()._default_manager.all()).get(pk=user_id)
        except get_user_model().DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
