"""The form for a policy (staff's, or a team lead's: ``limit_to``). It only parses (types, JSON); every rule is the service's
(``check_policy``), whose errors come back next to their fields."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib.auth.models import Group

from agents.models import Agent
from inbox import access
from inbox.models.policies import Policy
from inbox.policies.services import EDITABLE

# Service error path → form field.
ERROR_FIELDS = {"toolName": "tool_name", "matchSchema": "match_schema", "routeTeam": "route_team"}


class PolicyForm(forms.ModelForm):
    agent = forms.ModelChoiceField(Agent.objects.order_by("name"), required=False, to_field_name="slug")
    team = forms.ModelChoiceField(Group.objects.order_by("name"), required=False)
    route_team = forms.ModelChoiceField(Group.objects.order_by("name"), required=False, label="Route to team")
    match_schema = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono code-editor", "spellcheck": "false"}),
        label="JSON Schema",
        help_text="The tool arguments (or the interrupt's metadata) must satisfy it. Empty matches anything.",
    )

    class Meta:
        model = Policy
        fields = list(EDITABLE)
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            schema = self.instance.match_schema
            self.initial["match_schema"] = "" if schema is None else json.dumps(schema, indent=2)
            # The agent is chosen by slug: its initial value must be the slug too, or no option is selected.
            self.initial["agent"] = self.instance.agent.slug if self.instance.agent_id and self.instance.agent else None
        self.fields["name"].validators = []  # uniqueness is the service's rule

    def limit_to(self, user: Any) -> None:
        """A lead chooses among the teams they lead and those teams' agents (staff: all)."""
        if access.sees_everything(user):
            return
        led = access.led_team_ids(user)
        cast(forms.ModelChoiceField, self.fields["agent"]).queryset = (
            Agent.objects.filter(teams__in=led).distinct().order_by("name")
        )
        for name in ("team", "route_team"):
            cast(forms.ModelChoiceField, self.fields[name]).queryset = Group.objects.filter(pk__in=led).order_by("name")
        self.fields["mode"].help_text = "A lead's policy starts in shadow; a second lead or staff promotes it."

    def validate_unique(self) -> None:
        """The service checks the name (and the service account's) with every other rule."""

    def clean_match_schema(self) -> Any:
        text = (self.cleaned_data.get("match_schema") or "").strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from None

    def service_fields(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in self.Meta.fields}

    def add_service_errors(self, errors: list[dict]) -> None:
        for error in errors:
            head = error["path"].split(".", 1)[0]
            name = ERROR_FIELDS.get(head, head)
            message = error["message"] if head == error["path"] else f"{error['path']}: {error['message']}"
            self.add_error(name if name in self.fields else None, message)
