"""The path of an item's, a run's or a thread's page without ``reverse`` on every call.

``django.urls.reverse`` cost 30–60 µs a call on our VM (it walks the namespaces, formats and checks the
candidate pattern, and quotes the result); an ingest's answer makes four such calls and a list page one per
row, always for a route that takes one database id. ``id_path`` reverses each route once per URLconf and
script prefix with a sentinel id and keeps the text on either side of it; a call joins that text and the id.

It answers only what it can vouch for: an ``int`` id from 0 to 10^18 - 1, for a route whose one argument
uses Django's ``int`` converter or our ``id`` converter (``inbox.core.converters``), both of which write an
int as its digits and accept every such one. Anything else goes through ``reverse``, unchanged, so a bad id
still raises ``NoReverseMatch``.
"""

from __future__ import annotations

import re

from django.urls import Resolver404, get_resolver, get_script_prefix, get_urlconf, resolve, reverse
from django.urls.converters import IntConverter, get_converters

from inbox.core.converters import DatabaseIdConverter

_SENTINEL_ID = 987_654_321_987_654_321  # 18 digits: no route's text holds them by chance
_VOUCHED_CONVERTERS = (IntConverter, DatabaseIdConverter)
_PLACEHOLDER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<parameter>[^>]+)>")

# (resolver, route name, script prefix) -> the text before and after the id, or None: always reverse. Races
# between threads only compute the same entry twice.
_routes: dict[tuple[object, str, str], tuple[str, str] | None] = {}


def id_path(name: str, pk: int) -> str:
    """``reverse(name, args=[pk])``, for a route that takes one database id."""
    if type(pk) is not int or not 0 <= pk < 10**18:
        return reverse(name, args=[pk])
    prefix = get_script_prefix()
    key = (get_resolver(get_urlconf()), name, prefix)
    try:
        parts = _routes[key]
    except KeyError:
        parts = _routes[key] = _split(name, prefix)
    if parts is None:
        return reverse(name, args=[pk])
    return f"{parts[0]}{pk}{parts[1]}"


def _split(name: str, prefix: str) -> tuple[str, str] | None:
    """The route's path around its id, when its one argument is an id converter's; else None."""
    path = reverse(name, args=[_SENTINEL_ID])
    sentinel = str(_SENTINEL_ID)
    if path.count(sentinel) != 1 or not path.startswith(prefix):
        return None
    try:
        match = resolve("/" + path[len(prefix) :])
    except Resolver404:
        return None
    placeholders = list(_PLACEHOLDER.finditer(match.route))
    if match.view_name != name or len(placeholders) != 1:
        return None  # a regular-expression route, or more than one argument
    converter = get_converters().get(placeholders[0]["converter"] or "str")
    if type(converter) not in _VOUCHED_CONVERTERS:
        return None
    before, after = path.split(sentinel)
    return before, after
