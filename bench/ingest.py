"""Ingest throughput against a running server on PostgreSQL, compared with a trivial authenticated endpoint.

Creates a scratch database ``bench_ingest`` on the local PostgreSQL (dropped afterwards), starts the product's
ASGI server (uvicorn, 2 workers) on a loopback port, then drives it with concurrent clients:

- ``POST /api/v1/runs``: the spec's parallel example (3 interrupts) as an events body, each on a new thread;
- ``GET /api/v1/agent``: the cheapest call authenticated with the same agent token.

Prints requests/s, interrupts stored per second, p50 and p99 latency for both, and the ratio. The two endpoints
are driven in alternating rounds (trivial, ingest, trivial, ingest, ...) so that drift on the machine (other
load, the database growing) falls on both alike; each round's ratio is printed, and the headline ratio is the
total ingest rate over the total trivial rate. Every request goes to 127.0.0.1; the loops are bounded by count.

    .venv/bin/python bench/ingest.py [--requests 1500] [--rounds 3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/test")
DB_NAME = "bench_ingest"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")


def psql(sql: str) -> None:
    subprocess.run(["psql", PG_ADMIN, "-q", "-c", sql], check=True, capture_output=True)


def events_body(index: int) -> bytes:
    thread, run = f"bench-{uuid.uuid4().hex[:12]}", f"run-{index}"
    interrupts = [
        {
            "id": f"i-{n}",
            "reason": "tool_call",
            "toolCallId": f"tc-{n}",
            "message": f"Approve sendEmail #{n}?",
            "responseSchema": {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"],
            },
        }
        for n in range(3)
    ]
    events: list[dict] = [{"type": "RUN_STARTED", "threadId": thread, "runId": run}]
    for n in range(3):
        events += [
            {"type": "TOOL_CALL_START", "toolCallId": f"tc-{n}", "toolCallName": "sendEmail"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": f"tc-{n}", "delta": json.dumps({"to": f"u{n}@example.com"})},
            {"type": "TOOL_CALL_END", "toolCallId": f"tc-{n}"},
        ]
    events += [
        {"type": "STATE_SNAPSHOT", "snapshot": {"step": "approve"}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "user", "content": "send them"}]},
        {
            "type": "RUN_FINISHED",
            "threadId": thread,
            "runId": run,
            "outcome": {"type": "interrupt", "interrupts": interrupts},
        },
    ]
    return json.dumps({"events": events}).encode()


def cpu_seconds(server_pid: int) -> dict[str, float]:
    """CPU time used so far by the web workers (uvicorn's children), PostgreSQL's and Redis's processes, and this
    client: their differences over a round say where each request's CPU went."""
    import psutil

    def used(process: psutil.Process) -> float:
        try:
            times = process.cpu_times()
        except psutil.Error:
            return 0.0
        return times.user + times.system

    server = psutil.Process(server_pid)
    by_name: dict[str, float] = {"web": sum(used(child) for child in server.children(recursive=True))}
    by_name["postgres"] = sum(used(p) for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres")
    by_name["redis"] = sum(used(p) for p in psutil.process_iter(["name"]) if p.info["name"] == "redis-server")
    by_name["client"] = used(psutil.Process())
    return by_name


def drive(label: str, send, count: int, concurrency: int, expect: int, server_pid: int | None = None) -> dict:
    latencies: list[float] = []
    statuses: Counter[str] = Counter()

    def one(index: int) -> None:
        started = time.perf_counter()
        try:
            response = send(index)
            outcome = str(response.status_code)
            if response.status_code != expect:
                outcome += f" {response.text[:120]}"
        except httpx.HTTPError as exc:
            outcome = exc.__class__.__name__
        latencies.append(time.perf_counter() - started)
        statuses[outcome] += 1

    before = cpu_seconds(server_pid) if server_pid else {}
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(count)))
    elapsed = time.perf_counter() - started
    after = cpu_seconds(server_pid) if server_pid else {}
    latencies.sort()
    result = {
        "label": label,
        "count": count,
        "elapsed": elapsed,
        "latencies": latencies,
        "rps": count / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "failures": count - statuses[str(expect)],
        "statuses": statuses,
        "cpu": {name: after[name] - before[name] for name in after},
    }
    return result


def combine(results: list[dict]) -> dict:
    """One endpoint's rounds as one figure: total requests over total time, percentiles over all requests."""
    latencies = sorted(latency for result in results for latency in result["latencies"])
    count = sum(result["count"] for result in results)
    statuses: Counter[str] = sum((result["statuses"] for result in results), Counter())
    return {
        "label": results[0]["label"],
        "rps": count / sum(result["elapsed"] for result in results),
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "failures": sum(result["failures"] for result in results),
        "statuses": statuses,
        # CPU milliseconds per request, by process kind
        "cpu_ms": {name: sum(r["cpu"][name] for r in results) / count * 1000 for name in results[0]["cpu"]},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds the requests are split into")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    psql(f"DROP DATABASE IF EXISTS {DB_NAME}")
    psql(f"CREATE DATABASE {DB_NAME}")
    env = {
        **os.environ,
        "DATABASE_URL": PG_ADMIN.rsplit("/", 1)[0] + f"/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        # The bench measures throughput, not the per-agent ingest throttle (one agent posts everything).
        "INBOX_INGEST_RATE": "1000000/min",
    }
    py = sys.executable
    server = None
    try:
        subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        token = (
            subprocess.run(
                [py, "manage.py", "agent_create", "bench"],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        server = subprocess.Popen(
            [
                py,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(args.port),
                "--workers",
                "2",
                "--no-access-log",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        base = f"http://127.0.0.1:{args.port}"
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30, limits=httpx.Limits(max_connections=64)) as http:
            for _ in range(200):
                try:
                    if http.get("/api/v1/agent").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            else:
                raise RuntimeError("the server did not come up")
            bodies = [events_body(i) for i in range(args.requests)]
            # Warm both paths (connections, imports, query plans) before measuring.
            for i in range(20):
                http.get("/api/v1/agent")
                http.post("/api/v1/runs", content=events_body(10**6 + i), headers={"Content-Type": "application/json"})

            per_round = args.requests // args.rounds
            rounds: list[tuple[dict, dict]] = []
            for number in range(args.rounds):
                offset = number * per_round
                trivial = drive(
                    "GET /api/v1/agent",
                    lambda i: http.get("/api/v1/agent"),
                    per_round,
                    args.concurrency,
                    200,
                    server.pid,
                )
                ingest = drive(
                    "POST /api/v1/runs (3 interrupts)",
                    lambda i, offset=offset: http.post(
                        "/api/v1/runs", content=bodies[offset + i], headers={"Content-Type": "application/json"}
                    ),
                    per_round,
                    args.concurrency,
                    201,
                    server.pid,
                )
                rounds.append((trivial, ingest))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        psql(f"DROP DATABASE IF EXISTS {DB_NAME}")

    print(
        f"ingest bench: {per_round * args.rounds} requests per endpoint in {args.rounds} alternating rounds, "
        f"{args.concurrency} concurrent clients, uvicorn with 2 workers, PostgreSQL + Redis on loopback"
    )
    for number, (trivial, ingest) in enumerate(rounds, 1):
        print(
            f"  round {number}: trivial {trivial['rps']:6.1f} req/s, ingest {ingest['rps']:6.1f} req/s, "
            f"ratio {ingest['rps'] / trivial['rps']:.2f}"
        )
    trivial, ingest = (combine([pair[side] for pair in rounds]) for side in (0, 1))
    for result in (trivial, ingest):
        print(
            f"  {result['label']:<36} {result['rps']:8.1f} req/s   p50 {result['p50_ms']:7.1f} ms   "
            f"p99 {result['p99_ms']:7.1f} ms   failures {result['failures']}"
        )
    print("  CPU per request (ms):  " + "  ".join(f"{name:>8}" for name in trivial["cpu_ms"]) + "     total")
    for result in (trivial, ingest):
        cpu = result["cpu_ms"]
        print(
            f"    {result['label'][:19]:<19} "
            + "  ".join(f"{v:8.2f}" for v in cpu.values())
            + f"  {sum(cpu.values()):8.2f}"
        )
    for result in (trivial, ingest):
        if result["failures"]:
            print(f"  {result['label']} answers: {dict(result['statuses'])}")
    print(f"  interrupts stored per second: {ingest['rps'] * 3:.1f}")
    cpu_ratio = sum(trivial["cpu_ms"].values()) / sum(ingest["cpu_ms"].values())
    # The machine's two cores are the bottleneck: the rate ratio follows this one, which varies less between runs.
    print(f"  trivial CPU / ingest CPU per request (all processes): {cpu_ratio:.2f}")
    print(f"  ingest rate / trivial rate: {ingest['rps'] / trivial['rps']:.2f} (target >= 0.50)")
    return 0 if not (trivial["failures"] or ingest["failures"]) else 1


if __name__ == "__main__":
    sys.exit(main())
