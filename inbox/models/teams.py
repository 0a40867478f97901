"""Per-team settings beside Django's groups: who leads a team (``TeamLead``) and when it works
(``BusinessHours``). docs/teams.md."""

from __future__ import annotations

from datetime import time

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q


class TeamLead(models.Model):
    """``user`` leads ``team``: they may write its shadow policies, backtest them and set its escalation rules.
    It counts only while they are a member of the team (``inbox.access.led_team_ids``); it changes no one's
    access to items."""

    team = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="inbox_leads")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_leads")

    class Meta:
        app_label = "inbox"
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="team_lead_once")]

    def __str__(self) -> str:
        return f"{self.user_id} leads {self.team_id}"


class BusinessHours(models.Model):
    """When a team works: escalation clocks run and reminders go out only then (``inbox.teams.hours``)."""

    team = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="inbox_hours")
    # ISO weekdays, Monday 1 to Sunday 7, as digits: "12345" is Monday to Friday.
    days = models.CharField(max_length=7, default="12345", help_text="ISO weekdays as digits: 12345 = Mon–Fri.")
    opens = models.TimeField(default=time(9, 0))
    closes = models.TimeField(default=time(17, 0), help_text="After opens, the same day.")
    time_zone = models.CharField(max_length=64, default="UTC", help_text="An IANA name, e.g. Europe/Berlin.")

    class Meta:
        app_label = "inbox"
        verbose_name = "business hours"
        verbose_name_plural = "business hours"
        constraints = [
            models.CheckConstraint(condition=Q(closes__gt=models.F("opens")), name="business_hours_close_after_open"),
        ]

    def __str__(self) -> str:
        return f"{self.days} {self.opens:%H:%M}–{self.closes:%H:%M} {self.time_zone}"

    @property
    def weekdays(self) -> set[int]:
        return {int(day) for day in self.days if day in "1234567"}
