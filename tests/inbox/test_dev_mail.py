"""The development e-mail backend (the default, `make run`'s): one line in the sending process's output for each
e-mail, the message itself in a file under ``EMAIL_FILE_PATH`` (``var/mail/``). Django's console backend printed
every message whole into the worker's log, at WARNING: 16,200 of 16,833 lines of a 37-minute `make run`."""

from __future__ import annotations

import email
import email.policy
import io
import json
from pathlib import Path

import pytest
from django.core.mail import get_connection

from inbox.teams.mail import email_message
from tests.agent_servers import wait_for
from tests.conftest import spec_example
from tests.factories import UserFactory
from tests.inbox.test_notices import FAST


def _parsed(path: Path) -> email.message.EmailMessage:
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert isinstance(message, email.message.EmailMessage)
    return message


@pytest.mark.worker
def test_a_workers_e_mail_is_one_line_of_its_log_and_a_file_in_the_mail_directory(
    agent, team, alice, client, start_worker, tmp_path
):
    mail_dir = tmp_path / "mail"
    worker = start_worker(
        beat=True, extra_env={"EMAIL_BACKEND": "config.devmail.EmailBackend", "EMAIL_FILE_PATH": str(mail_dir), **FAST}
    )
    response = client.post(
        "/api/v1/runs",
        data=json.dumps(spec_example("minimal_tool_approval")),
        content_type="application/json",
        **agent.auth,
    )
    assert response.status_code == 201
    item_id = response.json()["items"][0]["id"]

    (written,) = wait_for(
        lambda: list(mail_dir.glob("*.eml")), timeout=60, what=f"alice's e-mail in {mail_dir}:\n{worker.log()[-3000:]}"
    )
    message = _parsed(written)
    assert message["To"] == "alice@example.com"
    body = message.get_body(preferencelist=("plain",))
    assert body is not None and f"/items/{item_id}/" in body.get_content()
    assert written.stat().st_mode & 0o777 == 0o600  # it holds decision links

    wait_for(lambda: str(written) in worker.log(), what="the e-mail's line in the worker's log")
    log = worker.log()
    about = [line for line in log.splitlines() if "alice@example.com" in line or str(written) in line]
    assert about == [f"e-mail to alice@example.com: “{message['Subject']}” (not sent; {written})"]
    # Nothing of the message itself: no header, no line of its text, no part of its HTML.
    assert f"/items/{item_id}/" not in log and "Content-Type" not in log and "<html" not in log


def test_each_message_gets_a_file_and_a_line_naming_whom_and_what(db, tmp_path):
    """Three e-mails sent on one connection (as the outbox sends a batch): three files, three lines."""
    output = io.StringIO()
    connection = get_connection("config.devmail.EmailBackend", file_path=str(tmp_path / "mail"), stream=output)
    people = [UserFactory(username=name, email=f"{name}@example.com") for name in ("ann", "ben", "cy")]
    messages = [email_message(person, "Digest: 2 items wait for you", "digest", {"items": []}) for person in people]
    assert connection.send_messages(messages) == 3

    lines = output.getvalue().splitlines()
    files = sorted((tmp_path / "mail").glob("*.eml"))
    assert len(lines) == 3 and len(files) == 3
    assert {_parsed(path)["To"] for path in files} == {"ann@example.com", "ben@example.com", "cy@example.com"}
    assert all(path.name.endswith(".eml") and "-digest-2-items-wait-for-you-" in path.name for path in files)
    for line, person in zip(lines, people, strict=True):
        assert line.startswith(f"e-mail to {person.email}: “Digest: 2 items wait for you” (not sent; ")
        assert line.endswith(".eml)") and Path(line.rsplit("; ", 1)[1][:-1]) in files
