"""The API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``): ``inbox.core.parsers.SafeJSONParser``
with the inbox's nesting limit, ``inbox.limits.MAX_JSON_DEPTH``."""

from __future__ import annotations

from inbox.core.parsers import SafeJSONParser
from inbox.limits import MAX_JSON_DEPTH


class JSONParser(SafeJSONParser):
    max_depth = MAX_JSON_DEPTH
