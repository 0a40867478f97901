"""The audit log's hash chain: every event sealed in order, and audit_verify names the first event that was edited,
deleted, inserted or reordered behind the inbox's back (by SQL, past the append-only triggers); a retention purge
leaves a chain that still verifies; a signed export fails the offline verifier after one changed byte."""

from __future__ import annotations

import copy
import subprocess
import sys
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from inbox.audit.chain import purge, seal_pending, verify
from inbox.audit.record import Actor, audit
from inbox.models import AuditEvent, AuditSeal, AuditVerification, Run
from tests.audit.conftest import behind_the_back
from tests.conftest import spec_example
from tests.helpers.exports import body, csv_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(agent, ingest) -> list[int]:
    """Events from three ingested runs and a person's action, all sealed; their ids, oldest first."""
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    ingest(agent, copy.deepcopy(spec_example("parallel_interrupts")))
    ingest(agent, copy.deepcopy(spec_example("approve_with_edits")))
    person = User.objects.create_user("carol")
    audit(actor=Actor.for_user(person), verb="settings.changed", obj=Run.objects.first(), data={"n": 1.5})
    assert seal_pending() == AuditEvent.objects.count() >= 6
    return list(AuditEvent.objects.order_by("id").values_list("id", flat=True))


def broken(expected_id: int | None, *words: str) -> None:
    verdict = verify()
    assert not verdict.ok
    assert verdict.event_id == expected_id, verdict.problem
    for word in words:
        assert word in verdict.problem
    assert AuditVerification.objects.latest().problem == verdict.problem


def test_a_sealed_log_verifies_and_each_event_has_its_place(log) -> None:
    verdict = verify()
    assert verdict.ok and verdict.events_checked == len(log) and verdict.through_seq == len(log)
    seals = list(AuditSeal.objects.order_by("seq").values_list("event_id", flat=True))
    assert seals == log  # committed one after another, so sealed in id order
    assert seal_pending() == 0  # nothing twice
    assert AuditVerification.objects.latest().ok


def test_an_edited_event_is_found_with_its_id(log) -> None:
    target = log[2]
    behind_the_back("UPDATE inbox_auditevent SET verb = 'run.ingested ' WHERE id = %s", [target])
    broken(target, "does not match its seal")


def test_edited_data_is_found_even_when_it_means_the_same(log) -> None:
    behind_the_back("UPDATE inbox_auditevent SET data = %s WHERE id = %s", ['{"n": 1.50001}', log[-1]])
    broken(log[-1])


def test_a_deleted_event_is_found_with_its_id(log) -> None:
    behind_the_back("DELETE FROM inbox_auditevent WHERE id = %s", [log[3]])
    broken(log[3], "was deleted")


def test_an_event_and_its_seal_deleted_break_the_chain_at_the_next_one(log) -> None:
    seal = AuditSeal.objects.get(event_id=log[3])
    behind_the_back("DELETE FROM inbox_auditevent WHERE id = %s", [log[3]])
    behind_the_back("DELETE FROM inbox_auditseal WHERE seq = %s", [seal.seq])
    broken(log[4], f"Seal {seal.seq} is missing")


def test_the_last_events_deleted_with_their_seals_are_found_against_the_signed_head(log) -> None:
    behind_the_back("DELETE FROM inbox_auditseal WHERE event_id >= %s", [log[-2]])
    behind_the_back("DELETE FROM inbox_auditevent WHERE id >= %s", [log[-2]])
    broken(None, "the last 2 events were deleted")


def test_an_event_inserted_into_the_sealed_past_is_found_with_its_id(log) -> None:
    behind_the_back(
        "INSERT INTO inbox_auditevent (id, actor_type, actor_label, verb, object_type, object_id, data, created_at)"
        " VALUES (0, 'user', 'mallory', 'item.decided', 'inboxitem', '1', '{}', %s)",
        [timezone.now() - timedelta(days=3)],
    )
    assert seal_pending() == 0  # below the sealed mark: never taken into the chain
    broken(0, "inserted")


def test_two_events_swapped_are_found_at_the_first(log) -> None:
    first, second = AuditSeal.objects.get(event_id=log[1]), AuditSeal.objects.get(event_id=log[2])
    behind_the_back("UPDATE inbox_auditseal SET seq = 0 WHERE seq = %s", [first.seq])
    behind_the_back("UPDATE inbox_auditseal SET seq = %s WHERE seq = %s", [first.seq, second.seq])
    behind_the_back("UPDATE inbox_auditseal SET seq = %s WHERE seq = 0", [second.seq])
    broken(log[2], "does not match its seal")


def test_a_forged_seal_with_a_recomputed_hash_still_breaks_the_next_link(log) -> None:
    """Someone who edits an event and rewrites its seal's hash (the hash function is public) leaves the next
    seal pointing at the old hash."""
    from inbox.audit.chain import link

    seal = AuditSeal.objects.get(event_id=log[2])
    prev = AuditSeal.objects.get(seq=seal.seq - 1).hash
    behind_the_back("UPDATE inbox_auditevent SET actor_label = 'mallory' WHERE id = %s", [log[2]])
    event = AuditEvent.objects.values().get(pk=log[2])
    forged = link(prev, event, seq=seal.seq, refs=seal.refs)
    behind_the_back("UPDATE inbox_auditseal SET hash = %s WHERE seq = %s", [forged, seal.seq])
    broken(log[3], "does not match its seal")


def test_deleting_a_person_nulls_their_references_and_the_chain_still_verifies(log) -> None:
    User.objects.get(username="carol").delete()
    assert AuditEvent.objects.get(pk=log[-1]).actor_user_id is None
    assert verify().ok


def test_a_reference_pointed_elsewhere_is_found(log) -> None:
    other = User.objects.create_user("mallory")
    behind_the_back("UPDATE inbox_auditevent SET actor_user_id = %s WHERE id = %s", [other.pk, log[-1]])
    broken(log[-1], "actor_user_id changed")


def test_a_purge_leaves_a_signed_checkpoint_and_a_chain_that_verifies(agent, ingest) -> None:
    ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    old = list(AuditEvent.objects.values_list("id", flat=True))
    behind_the_back("UPDATE inbox_auditevent SET created_at = %s", [timezone.now() - timedelta(days=40)])
    ingest(agent, copy.deepcopy(spec_example("parallel_interrupts")))
    kept = list(AuditEvent.objects.exclude(id__in=old).order_by("id").values_list("id", flat=True))
    seal_pending()
    checkpoint = purge(before=timezone.now() - timedelta(days=30))
    assert checkpoint is not None and checkpoint.events_purged == len(old) and checkpoint.seq == len(old)
    assert list(AuditEvent.objects.order_by("id").values_list("id", flat=True)) == kept
    verdict = verify()
    assert verdict.ok and verdict.events_checked == len(kept)
    assert purge(before=timezone.now() - timedelta(days=30)) is None  # nothing more is old enough
    ingest(agent, copy.deepcopy(spec_example("approve_with_edits")))
    seal_pending()
    assert verify().ok  # the chain goes on after the checkpoint
    behind_the_back("UPDATE inbox_auditcheckpoint SET hash = %s", ["0" * 64])
    broken(None, "not signed with this key")


def test_the_command_exits_non_zero_naming_the_event(log) -> None:
    call_command("audit_verify", "--quiet")
    behind_the_back("DELETE FROM inbox_auditevent WHERE id = %s", [log[1]])
    with pytest.raises(CommandError, match=f"Audit event {log[1]} "):
        call_command("audit_verify", "--quiet")


@pytest.mark.postgresql  # the append-only triggers are PostgreSQL's; on SQLite the chain alone holds
def test_postgresql_refuses_to_change_a_seal_or_delete_one_outside_a_purge(log) -> None:
    from django.db import DatabaseError, transaction

    for sql in ("UPDATE inbox_auditseal SET hash = 'x'", "DELETE FROM inbox_auditseal", "DELETE FROM inbox_auditevent"):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql)


def test_an_export_with_one_changed_byte_fails_the_offline_verifier(log, staff, client, tmp_path, settings) -> None:
    client.force_login(staff)
    for fmt in ("csv", "json"):
        data = body(client.get(f"/audit/export/events.{fmt}"))
        good, bad = tmp_path / f"good.{fmt}", tmp_path / f"bad.{fmt}"
        good.write_bytes(data)
        at = data.index(b"settings.changed")
        bad.write_bytes(data[:at] + b"S" + data[at + 1 :])
        command = [sys.executable, "tools/verify_audit_export.py", "--key", settings.INBOX_AUDIT_SIGNING_KEY]
        ok = subprocess.run([*command, str(good)], capture_output=True, text=True)
        assert ok.returncode == 0 and f"seal {len(log)}" in ok.stdout, ok.stdout + ok.stderr
        tampered = subprocess.run([*command, str(bad)], capture_output=True, text=True)
        assert tampered.returncode == 1 and "SIGNATURE MISMATCH" in tampered.stdout
        wrong_key = subprocess.run([*command[:-1], "not-the-key", str(good)], capture_output=True, text=True)
        assert wrong_key.returncode == 1
    rows = csv_rows(body(client.get("/audit/export/events.csv")))
    assert [int(row["seal_seq"]) for row in rows] == list(range(1, len(log) + 1))


@pytest.mark.postgresql  # SQLite has one writer at a time: no event can commit below another there
@pytest.mark.django_db(transaction=True)
def test_an_event_that_commits_late_below_a_newer_one_is_sealed_not_skipped(agent) -> None:
    """A writer that took an id and has not committed holds the sealer off (200 ms at most, then the pass seals
    nothing); once it commits, both events are sealed in id order."""
    import threading

    from django.db import connections, transaction

    started, release = threading.Event(), threading.Event()
    run = agent.agent  # any object with an agent

    def slow_writer() -> None:
        try:
            with transaction.atomic():
                audit(actor=Actor.system(), verb="slow.write", obj=run)
                started.set()
                release.wait(10)
        finally:
            connections.close_all()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert started.wait(10)
    audit(actor=Actor.system(), verb="fast.write", obj=run)
    assert seal_pending() == 0  # the slow writer is still open: nothing below it is final
    release.set()
    writer.join(10)
    assert seal_pending() == 2
    sealed = list(AuditSeal.objects.order_by("seq").values_list("event_id", flat=True))
    assert sealed == sorted(AuditEvent.objects.values_list("id", flat=True))
    assert verify().ok
