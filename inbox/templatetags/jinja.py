"""The Jinja2 side of the templates: the environment of ``jinja_templates/`` (settings ``TEMPLATES``) and
``{% jinja %}``, which draws one of its templates inside a Django template.

The list's rows are Jinja2 templates (``jinja_templates/inbox/_rows.html`` and ``_list_row.html``): drawn 50 times
a page, through Django's engine they cost several times the page's SQL. The partials a row shares with the item,
run and audit pages (outcome badge, deadline, delivery, avatar) are Jinja2 macros beside them, so their markup is
written once; the Django templates of the same names draw them with ``{% jinja %}``. Autoescape is on (Django's
Jinja2 backend sets it); the filters are ``inbox_tags``' under the same names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.template import engines
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from jinja2 import Environment, Undefined

from inbox.templatetags import inbox_tags

register = template.Library()


def iso(moment: datetime | None) -> str:
    """Django's ``|date:'c'``: the moment in the current time zone, ISO 8601."""
    return timezone.localtime(moment).isoformat() if moment else ""


def stamp(moment: datetime | None) -> str:
    """Django's ``|date:'Y-m-d H:i:s T'``: the moment in the current time zone, as people read it."""
    if not moment:
        return ""
    local = timezone.localtime(moment)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".rstrip()


def until_words(moment: datetime | None) -> str:
    """A time ahead as people say it in the current time zone: "14:30" today, "tomorrow 09:00", "Mon 09:00"
    within the week, "Dec 14, 09:00" later."""
    if not moment:
        return ""
    local = timezone.localtime(moment)
    days = (local.date() - timezone.localdate()).days
    clock = f"{local:%H:%M}"
    if days <= 0:
        return clock
    if days == 1:
        return f"tomorrow {clock}"
    if days < 7:
        return f"{local:%a} {clock}"
    return f"{local:%b} {local.day}, {clock}"


def truncatechars(text: Any, length: int) -> str:
    """Django's ``|truncatechars``: at most ``length`` characters, the last one "…" when cut."""
    text = str(text)
    return text if len(text) <= length else text[: length - 1] + "…"


FILTERS = {
    "iso": iso,
    "stamp": stamp,
    "truncatechars": truncatechars,
    "until_words": until_words,
    **{
        name: getattr(inbox_tags, name)
        for name in (
            "avatar_hue",
            "delivery",
            "delivery_sentence",
            "delivery_state",
            "resume_delivery",
            "initials",
            "reason_class",
            "reason_label",
            "run_deadline",
            "short_age",
            "short_remaining",
        )
    },
}


def environment(**options: Any) -> Environment:
    """The environment Django's Jinja2 backend builds (``OPTIONS["environment"]``). What is undefined draws
    nothing, as in Django's templates, with ``DEBUG`` too (the backend's ``DebugUndefined`` would print it)."""
    env = Environment(**{**options, "undefined": Undefined})
    env.filters.update(FILTERS)
    return env


@register.simple_tag(takes_context=True)
def jinja(context: template.Context, template_name: str) -> SafeString:
    """``{% jinja "inbox/_deadline.html" %}``: the Jinja2 template of that name, drawn with this template's
    context (an ``{% include %}``'s ``with`` values included)."""
    # Context.flatten() gives the template's variables by name; the stubs type its keys as also int and Node.
    html = engines["jinja2"].get_template(template_name).render(context.flatten())  # type: ignore[arg-type]
    return mark_safe(html)  # Jinja2 escaped every value it drew (autoescape)
