"""Signals the ingest path sends, for the packages that act on new work (policies, notifications, …).

Both are sent inside the ingest's ``atomic`` block, before the commit: receivers may write in that transaction
and start work outside the database with ``transaction.on_commit``. Their arguments are beside each signal."""

from django.dispatch import Signal

# (sender=Run, run, items): a new run and its items are stored (never for a replay). The auto-decision policies
# decide items here; receivers run in the order ``InboxConfig.ready`` connects them.
run_ingested = Signal()
# (sender=InboxItem, item_ids): a new run of a thread closed these open items as superseded.
items_superseded = Signal()
