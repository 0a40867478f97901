"""Helpers for the attack tests: what is stored, a loopback listener that must hear nothing, and an audit hook
that sees every file this process opens."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator

import pytest

from inbox.models import AuditEvent, Comment, Decision, InboxItem, Resume, Run, Thread


def stored() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Thread, Run, InboxItem, Decision, Comment, Resume, AuditEvent)
    }


class Listener:
    """A real HTTP server on 127.0.0.1 that records every request line it receives."""

    def __init__(self) -> None:
        requests = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                requests.append(self.path)
                body = b'{"type": "string"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


class _Opens:
    """Paths this process opened while watching (``sys.addaudithook`` sees every ``open``, C code included)."""

    watching: set[str] = set()
    seen: list[str] = []
    installed = False

    @classmethod
    def hook(cls, event: str, args: tuple) -> None:
        if event == "open" and cls.watching and args and isinstance(args[0], str | bytes):
            path = args[0].decode() if isinstance(args[0], bytes) else args[0]
            if path in cls.watching:
                cls.seen.append(path)


@pytest.fixture
def opened_files() -> Iterator[_Opens]:
    if not _Opens.installed:
        sys.addaudithook(_Opens.hook)  # audit hooks cannot be removed; it only records while a test watches
        _Opens.installed = True
    _Opens.seen = []
    yield _Opens
    _Opens.watching = set()
    _Opens.seen = []
