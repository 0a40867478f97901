"""Forms over the agent registry: the Django admin's agent form, and the settings form of the agent page.

Both keep the outbound auth header value write-only: it is never rendered back into a page, a blank field
keeps the stored value, and clearing it is a checkbox of its own. Saving goes through ``agents.services``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib.auth.models import Group

from agents.durations import DurationParseError, format_duration, parse_duration
from agents.endpoints import validate_endpoint_url
from agents.models import Agent, AgentToken, http_url_validator

# An agent's default expiry: long enough for a person to see the item, short enough to mean something.
TTL_MIN = timedelta(minutes=1)
TTL_MAX = timedelta(days=365)
TOKEN_LABEL_MAX = AgentToken._meta.get_field("label").max_length
# What the agent page's settings form changes, in the order it shows them.
SETTINGS_FIELDS = (
    "default_ttl",
    "approvals_required",
    "teams",
    "endpoint_url",
    "auth_header_name",
    "auth_header_value",
)


class AgentForm(forms.ModelForm):
    # The header value is a secret: never rendered back into the page. Blank keeps the stored one.
    auth_header_value = forms.CharField(
        required=False,
        max_length=Agent._meta.get_field("auth_header_value").max_length,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Secret value of that header, e.g. 'Bearer …'. Leave blank to keep the current value.",
    )
    clear_auth_header_value = forms.BooleanField(required=False, label="Send no auth header value")

    class Meta:
        model = Agent
        fields = [
            "name",
            "slug",
            "description",
            "enabled",
            "teams",
            "endpoint_url",
            "auth_header_name",
            "auth_header_value",
            "default_ttl",
            "approvals_required",
        ]

    def clean_endpoint_url(self) -> str:
        value = self.cleaned_data.get("endpoint_url") or ""
        try:
            http_url_validator(value)
        except forms.ValidationError:
            return value  # the model's validator says what is wrong with it
        validate_endpoint_url(value)  # no internal addresses, no user part (agents/endpoints.py)
        return value

    def clean_auth_header_value(self) -> str:
        value = self.cleaned_data.get("auth_header_value") or ""
        if not value and self.instance.pk:
            return self.instance.auth_header_value
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        if cleaned.get("clear_auth_header_value"):
            cleaned["auth_header_value"] = ""
        return cleaned


class DurationTextField(forms.Field):
    """A duration typed as people say it (``2h 30m``, ``90m``, ``1d``), shown back the same way."""

    widget = forms.TextInput

    def __init__(self, *, min_value: timedelta, max_value: timedelta, **kwargs: Any) -> None:
        self.min_value, self.max_value = min_value, max_value
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return format_duration(value) if isinstance(value, timedelta) else value

    def to_python(self, value: Any) -> timedelta | None:
        if value in self.empty_values:
            return None
        try:
            duration = parse_duration(str(value))
        except DurationParseError as error:
            raise forms.ValidationError(str(error), code="invalid") from None
        if not self.min_value <= duration <= self.max_value:
            raise forms.ValidationError(
                f"Between {format_duration(self.min_value)} and {format_duration(self.max_value)}, "
                f"got {format_duration(duration)}.",
                code="out_of_range",
            )
        return duration

    def widget_attrs(self, widget: forms.Widget) -> dict[str, Any]:
        return {**super().widget_attrs(widget), "maxlength": "64", "autocomplete": "off", "spellcheck": "false"}


class AgentSettingsForm(AgentForm):
    """What staff change on the agent page. Where the inbox sends resumes (endpoint and auth header) is
    for superusers only, as in the admin: for other staff those fields are left out and never saved."""

    ENDPOINT_FIELDS = ("endpoint_url", "auth_header_name", "auth_header_value", "clear_auth_header_value")

    default_ttl = DurationTextField(
        label="Default expiry (TTL)",
        min_value=TTL_MIN,
        max_value=TTL_MAX,
        help_text="For interrupts that carry no expiresAt, from when they arrive: e.g. 2h 30m, 90m or 1d. "
        "Applies to items that arrive from now on.",
    )
    teams = forms.ModelMultipleChoiceField(
        label="Teams",
        queryset=Group.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="People in these teams see and decide its items. None: only staff do.",
    )

    class Meta(AgentForm.Meta):
        fields = list(SETTINGS_FIELDS)
        labels = {
            "approvals_required": "Approvals required (quorum)",
            "endpoint_url": "AG-UI endpoint URL",
            "auth_header_name": "Auth header name",
        }
        help_texts = {
            "approvals_required": "Distinct people who must approve an item before it is approved. "
            "Applies at once, also to open items.",
            "endpoint_url": "Where the inbox POSTs resumes (RunAgentInput). http or https only.",
            "auth_header_name": "Header sent with every request to the agent.",
        }

    def __init__(self, *args: Any, can_set_endpoint: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.can_set_endpoint = can_set_endpoint
        self.fields["clear_auth_header_value"].label = "Clear it: send no auth header value"
        self.fields["auth_header_value"].label = "New auth header value"
        self.fields["auth_header_value"].help_text = "Write-only: leave blank to keep the current value."
        self.fields["approvals_required"].widget.attrs.update(min="1", inputmode="numeric")
        if not can_set_endpoint:
            for name in self.ENDPOINT_FIELDS:
                del self.fields[name]

    def clean(self) -> dict[str, Any]:
        typed = self.data.get(self.add_prefix("auth_header_value"), "") if self.can_set_endpoint else ""
        cleaned = super().clean()
        if typed and cleaned.get("clear_auth_header_value"):
            self.add_error("auth_header_value", "Type a new value or clear it, not both.")
        return cleaned

    def service_values(self) -> dict[str, Any]:
        """The new settings, for ``services.agent_update`` (the header value as it is to be stored)."""
        names = [name for name in SETTINGS_FIELDS if name in self.fields]
        return {name: self.cleaned_data[name] for name in names}


class TokenIssueForm(forms.Form):
    label = forms.CharField(
        required=False,
        max_length=TOKEN_LABEL_MAX,
        label="Label (optional)",
        help_text="What the token is for, e.g. the host that uses it.",
    )
