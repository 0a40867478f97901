from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from agents import services
from agents.models import http_url_validator

DESCRIPTION = (
    "The built-in demo agent (agents/demo.py, no LLM). Start a run from its page with one of: "
    "'email', 'parallel', 'filing', 'chain'."
)


class Command(BaseCommand):
    help = "Create or update the agent 'demo' (name 'Demo agent') pointing at the demo agent's endpoint. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument(
            "--endpoint", required=True, help="The demo agent's AG-UI endpoint, e.g. http://127.0.0.1:8001/"
        )

    def handle(self, *args, endpoint: str, **options):
        try:
            http_url_validator(endpoint)
        except ValidationError:
            raise CommandError(f"--endpoint must be an http or https URL, got {endpoint!r}") from None
        try:
            _, created = services.agent_ensure(
                slug="demo", name="Demo agent", endpoint_url=endpoint, description=DESCRIPTION, via="demo_setup"
            )
        except ValidationError as error:
            raise CommandError(f"--endpoint {endpoint!r} is refused: {' '.join(error.messages)}") from None
        self.stdout.write(f"{'Created' if created else 'Updated'} agent 'demo' at {endpoint} (visible to staff).")
