"""How fast a new item reaches an open page: from an ingest POST returning to the websocket message arriving.

    .venv/bin/python bench/live.py [--items 500]

Starts the product's ASGI server (uvicorn) on a loopback port with its own var directory
(``var/bench-live``: a fresh SQLite database, and the embedded Redis unless ``REDIS_URL`` is set),
logs an approver's websocket in, then posts ``--items`` interrupted runs one after another and times
when each ``item.created`` reaches the socket. Prints p50, p95 and max; asserts nothing. A message
that arrives before the POST has returned (the push is sent on commit, before the response) counts as 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(var_dir: Path) -> tuple[str, str]:
    """A fresh database with an approver and an agent; returns (session cookie, agent token)."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client

    from agents.models import Agent

    call_command("migrate", verbosity=0, interactive=False)
    team = Group.objects.create(name="ops")
    user = User.objects.create_user("approver", "approver@example.com", "bench-password")
    user.groups.add(team)
    agent = Agent.objects.create(slug="bench", name="Bench", endpoint_url="http://127.0.0.1:9/")
    agent.teams.add(team)
    _, token = agent.issue_token()
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}", token


def body(index: int) -> dict:
    return {
        "type": "RUN_FINISHED",
        "threadId": f"bench-t{index}",
        "runId": f"bench-r{index}",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": f"i-{index}", "reason": "confirmation", "message": f"Proceed with #{index}?"}],
        },
    }


async def measure(base: str, cookie: str, token: str, items: int) -> tuple[list[float], list[float], int]:
    import httpx
    import websockets

    arrived: dict[int, float] = {}
    waiting: dict[int, asyncio.Event] = {}
    ws_url = base.replace("http://", "ws://") + "/ws/inbox/"
    async with websockets.connect(ws_url, additional_headers={"Cookie": cookie, "Origin": base}) as socket:
        hello = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert hello["event"] == "hello", hello

        async def read() -> None:
            async for raw in socket:
                message = json.loads(raw)
                if message["event"] == "item.created":
                    pk = message["payload"]["item"]
                    arrived[pk] = time.perf_counter()
                    waiting.setdefault(pk, asyncio.Event()).set()

        reader = asyncio.create_task(read())
        after_return: list[float] = []
        after_send: list[float] = []
        early = 0
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
            for index in range(items):
                sent = time.perf_counter()
                response = await http.post("/api/v1/runs", json=body(index))
                returned = time.perf_counter()
                response.raise_for_status()
                pk = response.json()["items"][0]["id"]
                await asyncio.wait_for(waiting.setdefault(pk, asyncio.Event()).wait(), 10)
                delta = arrived[pk] - returned
                early += delta < 0
                after_return.append(max(0.0, delta))
                after_send.append(arrived[pk] - sent)
        reader.cancel()
    return after_return, after_send, early


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    args = parser.parse_args()

    var_dir = ROOT / "var" / "bench-live"
    if var_dir.exists():
        from config import embedded_redis

        embedded_redis.stop(var_dir)
        shutil.rmtree(var_dir)
    var_dir.mkdir(parents=True)
    os.environ.pop("DATABASE_URL", None)  # always its own scratch database, never one someone pointed at
    os.environ.update(
        {
            "INBOX_VAR_DIR": str(var_dir),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "LOG_LEVEL": "WARNING",
            "DEBUG": "0",
            "SECRET_KEY": "bench-live-secret-key-" + "x" * 30,
        }
    )
    cookie, token = prepare(var_dir)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = var_dir / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--ws",
                "websockets-sansio",
                "--no-proxy-headers",
                "--no-access-log",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                # Any answer will do: /healthz reports 503 here, as no Celery worker runs.
                if httpx.get(base + "/healthz", timeout=3).status_code:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.1)

        from django.conf import settings
        from django.db import connection

        print(f"server: uvicorn on {base}, database {connection.vendor}, Redis {settings.REDIS_URL}")
        started = time.perf_counter()
        after_return, after_send, early = asyncio.run(measure(base, cookie, token, args.items))
        elapsed = time.perf_counter() - started
        ms = 1000
        print(f"{args.items} items posted one after another in {elapsed:.1f} s")
        print(
            f"POST returned → websocket message: p50 {percentile(after_return, 0.5) * ms:.2f} ms, "
            f"p95 {percentile(after_return, 0.95) * ms:.2f} ms, max {max(after_return) * ms:.2f} ms "
            f"({early} of {args.items} arrived before the POST returned)"
        )
        print(
            f"POST sent → websocket message:     p50 {percentile(after_send, 0.5) * ms:.2f} ms, "
            f"p95 {percentile(after_send, 0.95) * ms:.2f} ms, mean {statistics.mean(after_send) * ms:.2f} ms"
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        from config import embedded_redis

        embedded_redis.stop(var_dir)


if __name__ == "__main__":
    main()
