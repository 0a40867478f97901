"""Signals the ingest path sends, for the packages that act on new work (notifications, …).

``run_ingested(sender=Run, run, items)``: sent inside the ingest's ``atomic`` block once a new run and its items
are stored (never for a replay). The transaction may already be committed by then (the ingest commits in the
round trip of its last inserts when nothing else of its own is left to write), so receivers must not write to
the database; work they start (I/O, tasks) goes after the commit with ``transaction.on_commit``.
"""

from django.dispatch import Signal

run_ingested = Signal()
