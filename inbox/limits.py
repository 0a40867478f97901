"""Every size limit the inbox enforces on what people and agents send, in one place.

The services enforce them; the API schema, the forms and the templates read them from here.
"""

from __future__ import annotations

MAX_BULK_ITEMS = 500  # items in one bulk decision
MAX_DECISION_COMMENT = 5000  # characters in the comment that goes with a decision
MAX_DISCUSSION_COMMENT = 10_000  # characters in a comment on an item's or run's discussion
MAX_ANSWER_BYTES = 256 * 1024  # bytes of a form answer or edited arguments typed in the page
MAX_JSON_DEPTH = 64  # nesting of any JSON value an agent or a person sends (arrays and objects)
MAX_SCHEMA_DEPTH = 32  # nesting of a responseSchema, counted the same way
MAX_ID_LENGTH = 255  # characters of threadId, runId, parentRunId, an interrupt's id, reason and toolCallId
MAX_DB_ID = 2**63 - 1  # the largest id a 64-bit column holds; larger ids in a request are refused or ignored
