"""Every size limit the inbox enforces on what people and agents send, in one place.

The services enforce them; the API schema, the forms and the templates read them from here.
"""

from __future__ import annotations

MAX_BULK_ITEMS = 500  # items in one bulk decision
MAX_DECISION_COMMENT = 5000  # characters in the comment that goes with a decision
MAX_DISCUSSION_COMMENT = 10_000  # characters in a comment on an item's or run's discussion
MAX_ANSWER_BYTES = 256 * 1024  # bytes of a form answer or edited arguments typed in the page
# Tab counts on the inbox list stop counting here and show "10,000+": a page never counts a million rows.
LIST_COUNT_LIMIT = 10_000
# A text search on the inbox list shows the newest this many matches (a term matching more is too vague to
# page through; the tab counts read "10,000+" then).
LIST_SEARCH_LIMIT = 10_000
# The audit log's pages count events up to here ("10,000+"), never the whole log.
AUDIT_COUNT_LIMIT = 10_000
