from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        from inbox.ingest.signals import run_ingested
        from inbox.live import membership
        from inbox.teams import notifications

        membership.connect()
        run_ingested.connect(notifications.notify_on_ingest, dispatch_uid="inbox.notify_on_ingest")
