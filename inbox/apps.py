from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        from inbox.audit import agent_receivers
        from inbox.ingest.signals import run_ingested
        from inbox.live import membership
        from inbox.policies import services as policies
        from inbox.teams import notifications

        membership.connect()
        policies.connect()  # keeps each process's cache of the agents' policies true
        run_ingested.connect(notifications.notify_on_ingest, dispatch_uid="inbox.notify_on_ingest")
        # The audit record of the agent registry's changes (agents sends signals; it imports no inbox code).
        agent_receivers.connect()
