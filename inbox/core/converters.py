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
