"""The API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``): ``inbox.core.safe_json`` rules for every
JSON request body, nested at most ``inbox.limits.MAX_JSON_DEPTH`` deep."""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from inbox.core.safe_json import UnsafeJson, loads
from inbox.limits import MAX_JSON_DEPTH


class UnsafeBody(ParseError):
    default_code = "invalid_body"

    def __init__(self, error: UnsafeJson):
        super().__init__(error.message)
        self.field = error.path or "body"
        self.rule = error.rule


class SafeJSONParser(JSONParser):
    """Refuses NUL, lone surrogates, NaN/Infinity, numbers that overflow, over-long integers and deep nesting
    with a 400 naming the field, instead of a 500 later on."""

    max_depth: ClassVar[int] = MAX_JSON_DEPTH

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            return loads(stream.read(), max_depth=self.max_depth)
        except UnsafeJson as error:
            raise UnsafeBody(error) from None
