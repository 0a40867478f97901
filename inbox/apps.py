from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        from inbox.audit import agent_receivers
        from inbox.ingest.signals import items_superseded, run_ingested
        from inbox.live import membership
        from inbox.policies import services as policies
        from inbox.resumes.signals import resume_failed
        from inbox.teams import failures, notifications, superseded

        membership.connect()
        # In this order, inside the ingest transaction: the agent's policies decide, route or re-count the new
        # items first; the announcement, queued for after the commit, then sees what they did.
        run_ingested.connect(policies.apply_policies_on_ingest, dispatch_uid="inbox.policies_on_ingest")
        run_ingested.connect(notifications.notify_on_ingest, dispatch_uid="inbox.notify_on_ingest")
        # Lower capabilities tell teams (above them) what people must hear of, without importing it.
        items_superseded.connect(superseded.on_items_superseded, dispatch_uid="inbox.notify_superseded")
        resume_failed.connect(failures.on_resume_failed, dispatch_uid="inbox.notify_delivery_failed")
        # The audit record of the agent registry's changes (agents sends signals; it imports no inbox code).
        agent_receivers.connect()
