"""`make run` (config.launcher) leaves no process behind: killed with SIGKILL, or stopped by SIGHUP (the
terminal closed), its web server, worker, beat, demo agent and embedded Redis go with it and the port is free.
So does SIGKILL of `make` itself, the process a user or a supervisor holds. A child that dies is started again.

The launcher runs as `make run` does, on the embedded default in a var dir of its own and free ports, so it
shares nothing with the rest of the suite."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from config import embedded_redis
from tests.conftest import LOOPBACK, ROOT, free_port

# It runs a real Celery worker (and beat) on an embedded default of its own, whatever the run's servers: once.
pytestmark = [pytest.mark.worker, pytest.mark.once]

PROC = Path("/proc")
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the children's coloured prefixes


def _process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time) for every process, read from /proc."""
    table = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces: split after its closing one.
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(fields[1]), fields[0], fields[19])
    return table


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every process below ``root``."""
    table = _process_table()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _state, started) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = started
                frontier.append(pid)
    return found


def _still_running(processes: dict[int, str]) -> dict[int, str]:
    """Those of ``processes`` still alive (the same pid and start time, and not a zombie)."""
    table = _process_table()
    alive = {}
    for pid, started in processes.items():
        row = table.get(pid)
        if row and row[2] == started and row[1] != "Z":
            try:
                alive[pid] = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
    return alive


def _port_is_free(port: int) -> bool:
    """No socket listens on it (TIME_WAIT leftovers of closed connections do not count, as for a new server)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
    return True


def _launcher_env(var_dir: Path, port: int, demo_port: int) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "CHANNELS_PREFIX", "SECRET_KEY", "PORT"}
        and not key.startswith("MAKE")  # not a sub-make of the make that runs the tests
    }
    env.update(INBOX_VAR_DIR=str(var_dir), PORT=str(port), DEMO_AGENT_PORT=str(demo_port))
    return env


def _healthy(port: int, process: subprocess.Popen, log_path: Path) -> Callable[[], bool]:
    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the launcher exited:\n{log_path.read_text()[-3000:]}")
        try:
            return LOOPBACK.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    return healthy


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.parametrize(
    ("signum", "times", "web_processes"),
    [(signal.SIGKILL, 1, "2"), (signal.SIGHUP, 1, ""), (signal.SIGTERM, 2000, "")],
    ids=["SIGKILL, two web processes", "SIGHUP", "a burst of SIGTERM"],
)
def test_the_launcher_leaves_no_process_behind(tmp_path, signum, times, web_processes):
    """Killed, or stopped by a signal. A burst: `timeout … make run` signals make and then the whole process
    group, and Ctrl-C reaches make and the launcher, so the launcher can get a second signal while it handles
    the first (its handler once deadlocked there, in threading.Event.set, and nothing was stopped)."""
    var_dir = tmp_path / "var"
    port, demo_port = free_port(), free_port()
    env = _launcher_env(var_dir, port, demo_port)
    env["WEB_PROCESSES"] = web_processes
    log_path = tmp_path / "launcher.log"
    with open(log_path, "w") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "config.launcher"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    children: dict[int, str] = {}
    try:
        healthy = _healthy(port, launcher, log_path)
        assert _wait_for(healthy, 240), f"/healthz never answered 200:\n{log_path.read_text()[-3000:]}"
        children = _descendants(launcher.pid)
        commands = " | ".join(_still_running(children).values())
        for part in ("uvicorn", "worker", "-deadlines", "beat", "agents.demo", "redis"):
            assert part in commands, f"no {part} among the launcher's children: {commands}"
        if web_processes:  # uvicorn's supervisor and its worker processes (multiprocessing spawns them)
            assert f"--workers {web_processes}" in commands
            assert sum("multiprocessing" in command for command in commands.split(" | ")) >= int(web_processes)
        # The launcher wrote the key every child signs with, before starting them.
        assert (var_dir / "secret_key").stat().st_mode & 0o777 == 0o600

        for number in range(times):  # a burst alternates with SIGHUP: the kernel merges a signal already pending
            launcher.send_signal(signum if number % 2 == 0 else signal.SIGHUP)
        launcher.wait(timeout=60)

        assert _wait_for(lambda: not _still_running(children), 60), (
            f"left behind after {signal.Signals(signum).name}: {_still_running(children)}"
        )
        assert _port_is_free(port) and _port_is_free(demo_port)
        assert not embedded_redis._answers(embedded_redis.socket_path(var_dir))
        if signum != signal.SIGKILL:
            assert "Stopped." in log_path.read_text()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        # Should the test fail, leave nothing running for the rest of the suite either.
        for pid in _still_running(children):
            os.kill(pid, signal.SIGKILL)


def test_killing_make_stops_everything_and_a_child_that_dies_is_started_again(tmp_path):
    """`make run` execs the launcher, which watches its parent: SIGKILL of `make` (nothing can be handled) still
    stops every process and frees the port. Before that, the worker is SIGKILLed: the launcher logs it and starts
    it again, and /healthz is back to 200."""
    var_dir = tmp_path / "var"
    port, demo_port = free_port(), free_port()
    log_path = tmp_path / "make.log"
    with open(log_path, "w") as log:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "run", "-o", ".venv/.installed", f"PORT={port}"],
            cwd=ROOT,
            env=_launcher_env(var_dir, port, demo_port),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    children: dict[int, str] = {}
    try:
        healthy = _healthy(port, make, log_path)
        assert _wait_for(healthy, 240), f"/healthz never answered 200:\n{log_path.read_text()[-3000:]}"
        children = _descendants(make.pid)
        table = _process_table()
        workers = {
            pid
            for pid, command in _still_running(children).items()
            if " worker " in command and "celery" in command and "-n worker-" in command
        }
        # The worker's main process is the one whose parent is no worker (its pool processes are its children);
        # pids wrap around on a busy machine, so which started first cannot be read off their numbers.
        (worker,) = [pid for pid in workers if table[pid][0] not in workers]
        os.killpg(worker, signal.SIGKILL)
        assert _wait_for(lambda: "starting worker again" in log_path.read_text(), 30), log_path.read_text()[-3000:]
        assert "worker exited with code -9" in log_path.read_text()
        assert _wait_for(lambda: worker not in _descendants(make.pid) and healthy(), 120), (
            f"the worker did not come back:\n{log_path.read_text()[-3000:]}"
        )
        children = _descendants(make.pid)

        make.kill()
        make.wait(timeout=10)

        assert _wait_for(lambda: not _still_running(children), 60), (
            f"left behind after SIGKILL of make: {_still_running(children)}\n{log_path.read_text()[-2000:]}"
        )
        assert _port_is_free(port) and _port_is_free(demo_port)
        assert not embedded_redis._answers(embedded_redis.socket_path(var_dir))
    finally:
        if make.poll() is None:
            make.kill()
            make.wait()
        for pid in _still_running(children):
            os.kill(pid, signal.SIGKILL)


def _run_until_ready(tmp_path: Path, var_dir: Path, name: str, *, via_make: bool = False) -> tuple[str, int]:
    """Start the launcher (or `make run`, with the demo agent on its default port), wait for its ready banner,
    stop it; its output and the port it served on."""
    port, demo_port = free_port(), free_port()
    env = _launcher_env(var_dir, port, demo_port)
    command = [sys.executable, "-m", "config.launcher"]
    if via_make:  # as a person types it, installation done (-o: the venv's stamp is not remade)
        command = ["make", "--no-print-directory", "run", "-o", ".venv/.installed", f"PORT={port}"]
        del env["DEMO_AGENT_PORT"]
    log_path = tmp_path / f"{name}.log"
    with open(log_path, "w") as log:
        launcher = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        ready = lambda: "Approval Inbox is ready" in log_path.read_text()  # noqa: E731
        assert _wait_for(lambda: _healthy(port, launcher, log_path)() and ready(), 240), log_path.read_text()[-3000:]
        if via_make:  # the demo agent the banner names listens on PORT + 1
            assert _wait_for(lambda: not _port_is_free(port + 1), 30), log_path.read_text()[-3000:]
        time.sleep(3)  # a few beats and sweeps: they must not fill the screen
    finally:
        os.killpg(launcher.pid, signal.SIGTERM)  # make and the launcher it became (its children: sessions of their own)
        launcher.wait(timeout=60)
    return log_path.read_text(), port


def _readme_banner() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("```\n====") + 4 :]
    return block[: block.index("```")].splitlines()


def test_the_ready_banner_says_where_to_log_in_and_the_log_stays_quiet(tmp_path):
    """The admin password scrolled away under ~6,000 log lines: the ready banner shows it again (kept 0600 in the
    var dir until it is changed), on the first run and the next, and the default log level is quiet.

    The first run is `make run` as a newcomer types it, read up to its banner: it came after 189 "Service
    Unavailable: /healthz" lines (the launcher's own probe, logged by the web server while the workers started)
    and Celery's banners and warnings, past the first screen. The banner is the README's, with this run's port,
    password and directory, and the demo agent it names (PORT + 1) answers there."""
    var_dir = tmp_path / "var"
    first, port = _run_until_ready(tmp_path, var_dir, "first", via_make=True)
    lines = [ANSI.sub("", line) for line in first.splitlines()]
    ready_at = next(number for number, line in enumerate(lines) if "Approval Inbox is ready" in line)
    assert ready_at < 40, "\n".join(lines[:ready_at])
    assert not [line for line in lines[:ready_at] if "healthz" in line or "Service Unavailable" in line]
    assert not [line for line in lines[:ready_at] if "Warning" in line or "-------------- " in line]

    created = first.split("password: ", 1)[1].split()[0]
    banner = lines[ready_at - 2 : ready_at + 7]
    assert banner[0] == "" and banner[1] == "=" * 64 and banner[-1] == "=" * 64
    as_in_readme = [
        line.replace(f"127.0.0.1:{port}/", "127.0.0.1:8000/")
        .replace(f"127.0.0.1:{port + 1}/", "127.0.0.1:8001/")
        .replace(created, "<random>")
        .replace(str(var_dir), "var")
        for line in banner[1:]
    ]
    assert as_in_readme == _readme_banner()
    assert f"log in as admin, password {created}" in first[first.index("Approval Inbox is ready") :]
    assert f"The demo agent: http://127.0.0.1:{port + 1}/" in first

    banner_text = first[first.index("Approval Inbox is ready") :]
    assert "manage.py changepassword admin" in banner_text
    stored = var_dir / "admin-password"
    assert stored.read_text() == created and stored.stat().st_mode & 0o777 == 0o600
    assert "INFO/" not in first  # Celery's per-task and per-beat lines
    again, _port = _run_until_ready(tmp_path, var_dir, "again")
    assert "Admin user created" not in again
    assert f"log in as admin, password {created}" in again[again.index("Approval Inbox is ready") :]
