"""The development e-mail backend (the default until ``EMAIL_BACKEND`` names another): nothing is sent; each
message is written whole to a file of its own under ``EMAIL_FILE_PATH`` (``var/mail/`` by default), and the
process prints one line saying to whom, what and where.

Django's console backend printed every message whole, HTML part included, into the worker's output, where Celery
logs standard output at WARNING: 16,200 of 16,833 worker lines in 37 minutes of `make run` were e-mail bodies."""

from __future__ import annotations

import os
import secrets
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend
from django.utils.text import slugify


class EmailBackend(BaseEmailBackend):
    def __init__(self, *args: Any, file_path: str | None = None, stream: TextIO | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.directory = Path(file_path or settings.EMAIL_FILE_PATH)
        # The process's own standard output, not ``sys.stdout``: a Celery worker redirects that into its log at
        # WARNING, which would prefix every line with a level it is not.
        self.stream = stream
        self._lock = threading.Lock()

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        sent = 0
        for message in email_messages:
            try:
                path = self._write(message)
            except OSError:
                if not self.fail_silently:
                    raise
                continue
            self._say(message, path)
            sent += 1
        return sent

    def _write(self, message: EmailMessage) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # decision links: readable by the owner
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        name = f"{stamp}-{slugify(str(message.subject))[:48] or 'no-subject'}-{secrets.token_hex(3)}.eml"
        path = self.directory / name
        # Written under a hidden name, then renamed: whoever lists *.eml never reads half a message.
        partial = self.directory / f".{name}.partial"
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(message.message().as_bytes())
        os.replace(partial, path)
        return path

    def _say(self, message: EmailMessage, path: Path) -> None:
        stream = self.stream or sys.__stdout__ or sys.stdout
        line = f"e-mail to {', '.join(message.recipients())}: “{message.subject}” (not sent; {path})\n"
        with self._lock:
            stream.write(line)
            stream.flush()
