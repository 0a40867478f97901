from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from agents import services
from agents.models import Agent, http_url_validator


class Command(BaseCommand):
    help = "Register an AG-UI agent and print a new ingest token (the last line of the output)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--endpoint", default="", help="The agent's AG-UI endpoint (http/https).")
        parser.add_argument("--name", default="")
        parser.add_argument("--auth-header", default="", help="Value sent as the Authorization header to the agent.")
        parser.add_argument("--ttl-hours", type=float, default=None, help="Default expiry for interrupts.")

    def handle(self, *args, slug: str, endpoint: str, name: str, auth_header: str, ttl_hours, **options):
        if endpoint:
            try:
                http_url_validator(endpoint)
            except ValidationError:
                raise CommandError(f"--endpoint must be an http or https URL, got {endpoint!r}") from None
        if Agent.objects.filter(slug=slug).exists():
            raise CommandError(f"An agent with slug {slug!r} exists; rotate its token with agent_token {slug} --rotate")
        try:
            _, raw = services.agent_register(
                slug=slug,
                name=name,
                endpoint_url=endpoint,
                auth_header_value=auth_header,
                default_ttl=timedelta(hours=ttl_hours) if ttl_hours is not None else None,
                via="agent_create",
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(f"Created agent {slug!r}. Ingest with: Authorization: Bearer <token>. Token (shown once):")
        self.stdout.write(raw)
