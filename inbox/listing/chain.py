"""The chain: when a resumed run interrupts again, its first open interrupt is the next thing to decide.

AG-UI lets an agent answer a resume with another ``RUN_FINISHED { outcome: interrupt }`` (the demo agent's
``chain`` scenario: approve the invoice, then confirm sending it). The approver who decided the first step
should land on the second without looking for it: the item page links it (and, with "Then go to the next
open item" on, goes there as soon as it arrives), and the run page says the agent asked again.
"""

from __future__ import annotations

from typing import Any

from inbox.access import visible_items
from inbox.models import InboxItem, Resume


def resumed_run_of(run_id: int) -> int | None:
    """The run the agent answered ``run_id``'s resume with, once the resume was delivered."""
    return (
        Resume.objects.filter(run_id=run_id, resumed_run__isnull=False).values_list("resumed_run_id", flat=True).first()
    )


def follow_up(*, user: Any, run_id: int, resumed_run_id: int | None = None) -> InboxItem | None:
    """The first open interrupt, visible to ``user``, of the run that resumed ``run_id`` (``resumed_run_id``
    when the caller already knows it); None while the resume is not delivered or the agent did not ask again."""
    resumed = resumed_run_id or resumed_run_of(run_id)
    if resumed is None:
        return None
    return (
        visible_items(user)
        .filter(run_id=resumed, status=InboxItem.Status.OPEN)
        .select_related("run")
        .order_by("position", "pk")
        .first()
    )


def follow_up_context(*, user: Any, run_id: int, resumed_run_id: int | None = None) -> dict[str, Any]:
    """What ``_follow_up.html`` draws: ``follow_up`` and ``follow_up_count``, how many interrupts the follow-up
    run asks (the link says "1 of 3" when it is more than one), and ``follow_up_from``, the run it follows: its
    link says so (``?asked_again=<run>``), and the follow-up's page announces "The agent asked again"."""
    item = follow_up(user=user, run_id=run_id, resumed_run_id=resumed_run_id)
    count = 0 if item is None else InboxItem.objects.filter(run_id=item.run_id, status=InboxItem.Status.OPEN).count()
    return {"follow_up": item, "follow_up_count": count, "follow_up_from": run_id}
