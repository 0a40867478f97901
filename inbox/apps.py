from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        from inbox import hooks, notifications

        if notifications.notify_on_ingest not in hooks.after_ingest:
            hooks.after_ingest.append(notifications.notify_on_ingest)
