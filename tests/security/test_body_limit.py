"""Request bodies are capped before they are read: a real server, a raw socket, an anonymous client."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlparse

import pytest
from django.test import override_settings

pytestmark = pytest.mark.timeout(60, func_only=True)  # the test, not the session's database set-up

LIMIT = 64 * 1024


def connect(base: str) -> socket.socket:
    url = urlparse(base)
    sock = socket.create_connection((url.hostname, url.port), timeout=20)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    while len(rest) < length:
        rest += sock.recv(65536)
    return status, json.loads(rest[:length])


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/items/1/decision", "/accounts/login/", "/inbox/bulk/"])
@override_settings(INBOX_REQUEST_MAX_BYTES=LIMIT)
def test_a_declared_length_over_the_limit_is_refused_before_any_body_is_sent(live_asgi, path):
    sock = connect(live_asgi)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {200 * 1024 * 1024}\r\n\r\n".encode()
    )
    status, body = read_response(sock)  # nothing of the 200 MiB was sent
    sock.close()
    assert status == 413
    assert body["rule"] == "max_bytes" and str(LIMIT) in body["detail"]


@override_settings(INBOX_REQUEST_MAX_BYTES=LIMIT)
def test_a_chunked_body_is_cut_off_at_the_limit(live_asgi):
    sock = connect(live_asgi)
    sock.sendall(
        b"POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"x" * 16384
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    sock.settimeout(0.05)
    response = b""
    try:
        while sent < 200 * 1024 * 1024:  # an anonymous 200 MiB upload, if nobody stops it
            sock.sendall(framed)
            sent += len(chunk)
            try:
                response = sock.recv(65536)
                if response:
                    break
            except TimeoutError:
                continue
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.settimeout(20)
    if not response:
        response = sock.recv(65536)
    sock.close()
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    # Stopped near the limit (what the kernel's socket buffers held aside), nowhere near 200 MiB.
    assert sent < 32 * 1024 * 1024


def test_a_body_within_the_limit_still_reaches_the_view(live_asgi, agent):
    import httpx

    body = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    response = httpx.post(
        f"{live_asgi}/api/v1/runs", json=body, headers={"Authorization": agent.auth["HTTP_AUTHORIZATION"]}
    )
    assert response.status_code == 201


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@override_settings(INBOX_REQUEST_BODY_TIMEOUT=1.0)
def test_a_body_trickled_slowly_is_answered_408(live_asgi, chunked):
    import time

    sock = connect(live_asgi)
    framing = "Transfer-Encoding: chunked" if chunked else "Content-Length: 1000"
    sock.sendall(
        f"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()
    )
    started = time.monotonic()
    sock.settimeout(0.3)
    status = None
    while time.monotonic() - started < 10:  # a byte every 0.3 s: never idle long, never finished
        try:
            sock.sendall(b"1\r\na\r\n" if chunked else b"a")
            data = sock.recv(65536, socket.MSG_PEEK)
        except TimeoutError:
            continue
        if data:
            sock.settimeout(5)
            status, body = read_response(sock)
            break
    sock.close()
    assert status == 408, "the server kept waiting for the body"
    assert body["rule"] == "body_timeout" and time.monotonic() - started < 5


@override_settings(INBOX_REQUEST_BODY_TIMEOUT=1.0)
def test_a_complete_body_is_not_timed_while_the_view_runs(live_asgi, agent):
    """The limit covers receiving the body only: a request whose body arrived in time is answered as usual."""
    import httpx

    body = {"type": "RUN_FINISHED", "threadId": "t-slow", "runId": "r-slow"}
    response = httpx.post(f"{live_asgi}/api/v1/runs", json=body, headers={"Authorization": f"Bearer {agent.token}"})
    assert response.status_code == 201
