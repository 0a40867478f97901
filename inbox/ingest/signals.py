"""Signals the ingest path sends, for the packages that act on new work (notifications, …).

``run_ingested(sender=Run, run, items)``: sent inside the ingest transaction once a new run and its items
are stored (never for a replay). Receivers that do I/O must defer it with ``transaction.on_commit``.
"""

from django.dispatch import Signal

run_ingested = Signal()
