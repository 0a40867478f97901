"""An item's provenance: its audit events in order with their seals, and the last verification's mark, the same in
its page and its API; the API follows the team rule like every item read."""

from __future__ import annotations

import copy

import pytest
from django.core.management import CommandError, call_command

from inbox.audit.chain import seal_pending
from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, InboxItem
from tests.audit.conftest import behind_the_back
from tests.conftest import spec_example

pytestmark = pytest.mark.django_db


@pytest.fixture
def decided(agent, ingest, alice) -> InboxItem:
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    item = InboxItem.objects.get(interrupt_id="int-abc123")
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True}, comment="")
    return item


def test_the_api_lists_the_items_events_with_their_seals_and_the_verification(decided, alice, client) -> None:
    client.force_login(alice)
    before = client.get(f"/api/v1/items/{decided.pk}/provenance").json()
    verbs = [event["verb"] for event in before["events"]]
    assert verbs[:2] == ["run.ingested", "item.created"] and "item.resolved" in verbs and "resume.created" in verbs
    assert all(event["seal"] is None for event in before["events"])
    assert before["chain"]["verified"] is False and "not sealed yet" in before["chain"]["words"]

    call_command("audit_verify", "--quiet")  # seals, then verifies
    after = client.get(f"/api/v1/items/{decided.pk}/provenance").json()
    assert all(isinstance(event["seal"], int) for event in after["events"])
    assert after["chain"]["verified"] is True and after["chain"]["verificationOk"] is True
    assert after["chain"]["verifiedThrough"] == AuditEvent.objects.count()

    client.get(decided.get_absolute_url())
    card = client.get(f"/inbox/items/{decided.pk}/provenance/").content.decode()  # the page's card, opened
    assert "Sealed in the audit chain and verified through seal" in card
    seen = client.get(f"/api/v1/items/{decided.pk}/provenance").json()["seen"]
    assert [look["user"] for look in seen] == ["alice"]  # the page just shown to her
    assert "Shown to <strong>alice</strong>" in card
    for event in after["events"]:
        assert f'data-provenance-event="{event["id"]}"' in card


def test_the_item_page_reads_no_audit_row_until_the_card_is_opened(decided, alice, client) -> None:
    """The Audit record card is closed on the page and loads its events when opened: the item page is no slower
    for it (bench/audit_overhead.py)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(alice)
    client.get(decided.get_absolute_url())
    with CaptureQueriesContext(connection) as queries:
        page = client.get(decided.get_absolute_url()).content.decode()
    audit_tables = ("inbox_auditevent", "inbox_auditseal", "inbox_auditverification")
    assert not [q["sql"] for q in queries.captured_queries if any(table in q["sql"] for table in audit_tables)]
    assert "data-provenance-lazy" in page and f'hx-get="/inbox/items/{decided.pk}/provenance/"' in page
    assert "data-provenance-event" not in page


def test_a_broken_chain_shows_on_the_item(decided, alice, client) -> None:
    seal_pending()
    event = AuditEvent.objects.get(verb="item.resolved")
    behind_the_back("UPDATE inbox_auditevent SET actor_label = 'mallory' WHERE id = %s", [event.pk])
    with pytest.raises(CommandError, match=f"Audit event {event.pk} "):
        call_command("audit_verify", "--quiet")
    client.force_login(alice)
    chain = client.get(f"/api/v1/items/{decided.pk}/provenance").json()["chain"]
    assert chain["verificationOk"] is False and "altered" in chain["words"]
    card = client.get(f"/inbox/items/{decided.pk}/provenance/").content.decode()
    assert "The last verification found the audit log altered" in card


def test_another_team_gets_404(decided, dave, client) -> None:
    client.force_login(dave)
    assert client.get(f"/api/v1/items/{decided.pk}/provenance").status_code == 404
    assert client.get(f"/inbox/items/{decided.pk}/provenance/").status_code == 404
