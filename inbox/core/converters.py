"""Path converters. ``id``: a database id in a URL, at most 18 digits, so it always fits a 64-bit column.

Django's ``int`` converter takes any number of digits, and looking up ``/items/99999999999999999999/`` then
fails in the database driver (``OverflowError``, a 500) instead of answering 404.
"""

from __future__ import annotations

from django.urls import register_converter


class DatabaseIdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(DatabaseIdConverter, "id")


def database_id(raw: str | None) -> int | None:
    """A database id from a query parameter, or None: ASCII digits only (``"²".isdigit()`` is true), at most
    18 of them, as the ``id`` converter takes in a path."""
    if not raw or len(raw) > 18 or not (raw.isascii() and raw.isdigit()):
        return None
    return int(raw) or None
