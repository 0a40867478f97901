"""The Jinja2 environment of the one template the Django engine was too slow for: the inbox list's rows
(``templates/jinja2/inbox/rows.html``, rendered by ``inbox.templatetags.row_tags.list_rows``).

Why a second engine: a list page draws 50 rows of some 26 values each, and Django's engine spent about 4 ms of CPU
placing them (``bench/inbox_list.py``), a sixth of the page; Jinja2 compiles the same markup to Python and places
them in under 1 ms. Every other template stays a Django template.

Values are escaped by MarkupSafe (Django's backend turns autoescaping on): the same five characters as Django's
``escape``, two of them written differently (``&#39;`` and ``&#34;`` where Django writes ``&#x27;`` and
``&quot;``), which a browser reads alike. A name the template does not have is an error, not an empty string."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, StrictUndefined


def environment(**options: Any) -> Environment:
    options["undefined"] = StrictUndefined
    return Environment(**options)
