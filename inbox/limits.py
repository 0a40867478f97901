"""Every size limit the inbox enforces on what people and agents send, in one place.

The services enforce them; the API schema, the forms and the templates read them from here.
"""

from __future__ import annotations

MAX_BULK_ITEMS = 500  # items in one bulk decision
MAX_DECISION_COMMENT = 5000  # characters in the comment that goes with a decision
MAX_DISCUSSION_COMMENT = 10_000  # characters in a comment on an item's or run's discussion
MAX_ANSWER_BYTES = 256 * 1024  # bytes of a form answer or edited arguments typed in the page
MAX_POLICY_SCHEMA_BYTES = 16 * 1024  # serialized size of an auto-decision policy's match schema
MAX_POLICY_SCHEMA_DEPTH = 32  # nesting of that schema
MAX_POLICY_PATTERN = 200  # characters of one pattern in it (matched with RE2)
