"""The API's JSON parser: ``inbox.core.safe_json`` rules for every JSON request body.

The nesting limit is the project's to choose: ``inbox.parsers.JSONParser`` sets ``max_depth``."""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from inbox.core.safe_json import UnsafeJson, loads


class UnsafeBody(ParseError):
    default_code = "invalid_body"

    def __init__(self, error: UnsafeJson):
        super().__init__(error.message)
        self.field = error.path or "body"
        self.rule = error.rule


class SafeJSONParser(JSONParser):
    """Refuses NUL, lone surrogates, NaN/Infinity, numbers that overflow, over-long integers and deep nesting
    with a 400 naming the field, instead of a 500 later on. Subclasses set ``max_depth``."""

    max_depth: ClassVar[int]

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            return loads(stream.read(), max_depth=self.max_depth)
        except UnsafeJson as error:
            raise UnsafeBody(error) from None
