from django.core.management.base import BaseCommand, CommandError

from agents import services
from agents.models import Agent


class Command(BaseCommand):
    help = "Issue, rotate or revoke an agent's ingest tokens. A new token is printed as the last line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--rotate", action="store_true", help="Revoke every live token, then issue a new one.")
        group.add_argument("--revoke", metavar="PREFIX", help="Revoke the token starting with PREFIX ('all' for all).")
        group.add_argument("--list", action="store_true")

    def handle(self, *args, slug: str, rotate: bool, revoke: str | None, list: bool, **options):
        try:
            agent = Agent.objects.get(slug=slug)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent {slug!r}") from None
        if list:
            for token in agent.tokens.all():
                self.stdout.write(
                    f"{token.prefix}…  {'revoked' if token.revoked_at else 'active'}  {token.created_at:%Y-%m-%d %H:%M}"
                )
            return
        if revoke:
            revoked = services.tokens_revoke(agent, prefix=None if revoke == "all" else revoke, via="agent_token")
            if not revoked:
                raise CommandError(f"No live token of {slug!r} starts with {revoke!r}")
            self.stdout.write(f"Revoked {len(revoked)} token(s).")
            return
        if rotate:
            raw = services.tokens_rotate(agent, label="rotated", via="agent_token")
        else:
            raw = services.token_issue(agent, label="issued", via="agent_token")
        self.stdout.write(f"New ingest token for {slug!r} (shown once):")
        self.stdout.write(raw)
