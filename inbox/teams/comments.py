"""Comments on an item's or a run's discussion."""

from __future__ import annotations

from django.db import transaction

from inbox.audit.record import Actor, audit_event, audit_record
from inbox.decisions.rules import DecisionError, check_comment_length
from inbox.limits import MAX_DISCUSSION_COMMENT
from inbox.live import push as live
from inbox.models import Comment, InboxItem, Run


def record_comment(*, user, body: str, item: InboxItem | None = None, run: Run | None = None) -> Comment:
    target = item if item is not None else run
    if target is None:
        raise TypeError("A comment is on an item or on a run.")
    body = (body or "").strip()
    if not body:
        raise DecisionError(
            400, "invalid_comment", "A comment needs some text.", [{"path": "body", "message": "must not be empty"}]
        )
    check_comment_length(body, limit=MAX_DISCUSSION_COMMENT, path="body")
    with transaction.atomic():
        comment = Comment.objects.create(item=item, run=run, user=user, body=body)
        audit_record(
            audit_event(
                actor=Actor.for_user(user),
                verb="comment.added",
                obj=comment,
                agent=target.agent,
                thread=target.thread,
                data={"on": f"{target._meta.model_name}:{target.pk}"},
            )
        )
        live.publish_on_commit(
            live.groups_for(
                agent_id=target.agent_id,
                item_id=item.pk if item else None,
                run_id=run.pk if run else (item.run_id if item else None),
            ),
            "comment.added",
            {"item": item.pk if item else None, "run": run.pk if run else None, "by": user.get_username()},
        )
    return comment
