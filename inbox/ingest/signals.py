"""Signals the ingest path sends, for the packages that act on new work (policies, notifications, …).

``run_ingested(sender=Run, run, items)``: sent inside the ingest's ``atomic`` block once a new run and its items
are stored (never for a replay), before the commit. Receivers may write (the auto-decision policies decide
items here, in the ingest's transaction); work they start outside the database (I/O, tasks) goes after the
commit with ``transaction.on_commit``. Receivers run in the order ``InboxConfig.ready`` connects them.

``items_superseded(sender=InboxItem, item_ids)``: sent in the same transaction when a new run of a thread closed
its open items as superseded.
"""

from django.dispatch import Signal

run_ingested = Signal()
items_superseded = Signal()
