from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inbox.models import ApiToken


class Command(BaseCommand):
    help = "Issue or revoke an approver's API tokens. A new token is printed as the last line (shown once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--label", default="", help="What the token is for.")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--revoke", metavar="PREFIX", help="Revoke the token starting with PREFIX ('all' for all).")
        group.add_argument("--list", action="store_true")

    def handle(self, *args, username: str, label: str, revoke: str | None, list: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}")
        tokens = ApiToken.objects.filter(user=user)
        if list:
            for token in tokens.order_by("created_at"):
                state = "revoked" if token.revoked_at else "active"
                self.stdout.write(f"{token.prefix}…  {state}  {token.created_at:%Y-%m-%d %H:%M}  {token.label}")
            return
        if revoke:
            live = tokens.filter(revoked_at__isnull=True)
            if revoke != "all":
                live = live.filter(prefix__startswith=revoke)
            count = live.update(revoked_at=timezone.now())
            if not count:
                raise CommandError(f"No live token of {username!r} starts with {revoke!r}")
            self.stdout.write(f"Revoked {count} token(s).")
            return
        _, raw = ApiToken.issue(user, label=label)
        self.stdout.write(f"New API token for {username!r} (shown once; only its hash is stored):")
        self.stdout.write(raw)
