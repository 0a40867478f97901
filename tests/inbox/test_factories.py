"""The factories build what the product would: a run built by ``interrupted_run`` has the same items, in the
same states, as the same run posted through ingest, so tests built on factories test the real shapes."""

from __future__ import annotations

from inbox.models import Decision, InboxItem, Run
from tests.factories import DecisionFactory, InboxItemFactory

FIELDS = (
    "position",
    "interrupt_id",
    "reason",
    "message",
    "expires_at",
    "expires_at_defaulted",
    "status",
    "outcome",
    "status_note",
    "decided_at",
    "raw",
)


def _shape(run: Run) -> tuple[dict, list[dict]]:
    run_fields = {"outcome": run.outcome, "notified_at": run.notified_at, "thread": run.thread.thread_id}
    items = [{field: getattr(item, field) for field in FIELDS} for item in run.items.order_by("position")]
    return run_fields, items


def test_a_stored_run_has_the_shape_of_the_same_run_posted_through_ingest(post_run, stored_run, agent):
    posted = _shape(post_run("t-1", "r-1", 5, None, -1))
    Run.objects.all().delete()
    stored = _shape(stored_run("t-1", "r-1", 5, None, -1))
    assert stored == posted
    # One interrupt already past its expiresAt closes its siblings at once: the run can never be resumed.
    assert [item["status"] for item in stored[1]] == ["expired", "expired", "expired"]
    assert [item["outcome"] for item in stored[1]] == ["expired", "expired", "expired"]


def test_an_item_and_a_decision_hang_together(db):
    item = InboxItemFactory()
    assert (item.agent, item.thread) == (item.run.agent, item.run.thread)
    assert item.raw["id"] == item.interrupt_id and item.status == InboxItem.Status.OPEN
    decision = DecisionFactory(item=item)
    assert Decision.objects.get(item=item, final=True).user == decision.user
