"""manage.py audit_purge: delete old audit events behind a signed checkpoint the chain goes on from."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inbox.audit.chain import purge, seal_pending


class Command(BaseCommand):
    help = "Delete audit events older than --days days (sealed ones only), keeping a signed checkpoint."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--days", type=int, required=True, help="Keep this many days of events (at least 1).")

    def handle(self, *args: Any, days: int, **options: Any) -> None:
        if days < 1:
            raise CommandError("--days must be at least 1.")
        seal_pending()
        checkpoint = purge(before=timezone.now() - timedelta(days=days))
        if checkpoint is None:
            self.stdout.write("nothing to purge")
            return
        self.stdout.write(f"purged {checkpoint.events_purged:,} events; the chain goes on from seal {checkpoint.seq}")
