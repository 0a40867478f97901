"""manage.py audit_verify: seal what is pending, then walk the audit chain and report the first tampered event."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbox.audit.chain import seal_pending, verify


class Command(BaseCommand):
    help = (
        "Verify the audit log's hash chain: reports the first event that was edited, deleted, inserted or "
        "reordered behind the inbox's back (exit status 1), with its id. Prints its speed."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-seal", action="store_true", help="Do not seal pending events first.")
        parser.add_argument("--quiet", action="store_true", help="Print only the verdict.")

    def handle(self, *args: Any, no_seal: bool, quiet: bool, **options: Any) -> None:
        if not no_seal:
            sealed = seal_pending()
            if sealed and not quiet:
                self.stdout.write(f"sealed {sealed} pending events")

        def progress(checked: int, seconds: float) -> None:
            if not quiet and checked % 100_000 == 0:
                self.stdout.write(f"  {checked:,} events checked ({checked / max(seconds, 1e-9):,.0f}/s)")

        verdict = verify(progress=progress)
        rate = verdict.events_checked / max(verdict.seconds, 1e-9)
        summary = f"{verdict.events_checked:,} events through seal {verdict.through_seq} in {verdict.seconds:.2f} s ({rate:,.0f} events/s)"
        if not verdict.ok:
            raise CommandError(f"audit chain BROKEN after {summary}: {verdict.problem}", returncode=1)
        self.stdout.write(f"audit chain verified: {summary}")
