"""Every size limit the inbox enforces on what people and agents send, in one place.

The services enforce them; the API schema, the forms and the templates read them from here (templates with
``{% limit "MAX_DECISION_COMMENT" %}``). The two ingest limits are deployment settings (environment
variables, see docs/configuration.md), read when they are used so that a changed setting applies at once.
"""

from __future__ import annotations

from django.conf import settings

MAX_BULK_ITEMS = 500  # items in one bulk decision
MAX_DECISION_COMMENT = 5000  # characters in the comment that goes with a decision
MAX_DISCUSSION_COMMENT = 10_000  # characters in a comment on an item's or run's discussion
MAX_ESCALATION_MINUTES = 7 * 24 * 60  # an escalation rule's afterMinutes / beforeDeadlineMinutes (a week)
MAX_ANSWER_BYTES = 256 * 1024  # bytes of a form answer or edited arguments typed in the page
MAX_START_MESSAGE = 20_000  # characters of the message that starts a run on an agent


def max_ingest_bytes() -> int:
    """Bytes of one ``POST /api/v1/runs`` body (``INBOX_INGEST_MAX_BYTES``; 413 above it)."""
    return settings.INBOX_INGEST_MAX_BYTES


def max_interrupts_per_run() -> int:
    """Interrupts in one run (``INBOX_MAX_INTERRUPTS_PER_RUN``; 400 above it)."""
    return settings.INBOX_MAX_INTERRUPTS_PER_RUN


MAX_JSON_DEPTH = 64  # nesting of any JSON value an agent or a person sends (arrays and objects)
MAX_SCHEMA_DEPTH = 32  # nesting of a responseSchema, counted the same way
# The widest responseSchema an agent may send (400 at ingest naming the keyword above its limit): checking a
# schema, validating answers against it and drawing its form take time that grows with these. Real agents'
# schemas name a handful of fields; a long list of choices (countries, time zones) is an ``enum``.
MAX_SCHEMA_REQUIRED = 1000  # names in one ``required``
MAX_SCHEMA_PROPERTIES = 1000  # entries of one ``properties``
MAX_SCHEMA_COMBINED = 1000  # subschemas in one ``allOf``, ``anyOf`` or ``oneOf``
MAX_SCHEMA_ENUM = 10_000  # values in one ``enum``
MAX_SCHEMA_SUBSCHEMAS = 1000  # subschemas in the whole schema, however deep (the root not counted)
MAX_SCHEMA_SIZES = {
    "required": MAX_SCHEMA_REQUIRED,
    "properties": MAX_SCHEMA_PROPERTIES,
    "allOf": MAX_SCHEMA_COMBINED,
    "anyOf": MAX_SCHEMA_COMBINED,
    "oneOf": MAX_SCHEMA_COMBINED,
    "enum": MAX_SCHEMA_ENUM,
    "subschemas": MAX_SCHEMA_SUBSCHEMAS,
}
# Keyword steps (``inbox.core.jsonschema_safe``) spent finding an item's yes/no shape, all its candidate answers
# together (``inbox.decisions.shapes``): past them the item is answered through its form.
MAX_SHAPE_CHECK_STEPS = 20_000
MAX_ID_LENGTH = 255  # characters of threadId, runId, parentRunId, an interrupt's id, reason and toolCallId
MAX_POLICY_SCHEMA_BYTES = 16 * 1024  # serialized size of an auto-decision policy's match schema
MAX_POLICY_SCHEMA_DEPTH = 32  # nesting of that schema
MAX_POLICY_PATTERN = 200  # characters of one pattern in it (matched with RE2)
# A policy's backtest (``inbox.policies.backtest``): the period it reads, in days (30 unless asked), and how many
# candidate items it reads in the request that asks for it; past that a Celery worker reads them, in chunks.
BACKTEST_DEFAULT_DAYS = 30
MAX_BACKTEST_DAYS = 365
BACKTEST_INLINE_ITEMS = 2_000
BACKTEST_CHUNK = 2_000
# Backtests one person may have queued or running at once (``inbox.policies.backtest``); 429 past it.
MAX_BACKTESTS_IN_PROGRESS = 3
# The inbox list's current tab stops counting here and shows "10,000+" (its pager stops there too): a page
# never counts a million rows.
LIST_COUNT_LIMIT = 10_000
# The other tabs' badges stop at this ("1,000+"): what they say is "a lot", and counting further for each of them
# would be most of the list's SQL.
LIST_BADGE_COUNT_LIMIT = 1_000
# A text search on the inbox list shows the newest this many matches (a term matching more is too vague to
# page through: 20 pages; the tab counts read "1,000+" then).
LIST_SEARCH_LIMIT = 1_000
# A search first reads this many of the viewer's newest items with a plain LIKE, newest first, and asks the
# trigram index only for older matches when those held fewer than LIST_SEARCH_LIMIT (``inbox.listing.selectors``).
SEARCH_RECENT_ROWS = 5_000
# Saved views of the inbox list: how many one person keeps, the length of a view's name, and how many (their own
# first, then their teams') the list shows as tabs, each counted up to LIST_BADGE_COUNT_LIMIT.
MAX_SAVED_VIEWS = 20
MAX_SAVED_VIEW_NAME = 60
SAVED_VIEW_TABS = 30
# The audit log's pages count events up to here ("10,000+"), never the whole log.
AUDIT_COUNT_LIMIT = 10_000
MAX_DB_ID = 2**63 - 1  # the largest id a 64-bit column holds; larger ids in a request are refused or ignored
# The item page lists arguments and answers field by field up to here; the rest is in their JSON view.
FIELD_LIST_ROWS = 300
