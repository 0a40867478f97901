"""``make run``: the whole product on one machine.

Writes the secret-key file (unless ``SECRET_KEY`` is set), starts the embedded Redis (unless ``REDIS_URL`` is
set), migrates, creates an admin user the first time (printing its credentials once), registers the demo
agent, then runs the ASGI web server, a Celery worker, Celery beat and the demo agent side by side with
prefixed output. Ctrl-C, SIGTERM or SIGHUP (the terminal closed) stops every process it started; if one of
them dies, the rest are stopped too.

Children never outlive the launcher: each runs in a session of its own (so Ctrl-C reaches only the
launcher, which stops them in order), and on Linux each asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``), so even ``kill -9`` of the launcher leaves no server holding the port.
The production process types are listed in the ``Procfile``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
COLORS = ["\033[36m", "\033[35m", "\033[33m", "\033[32m", "\033[34m"]
RESET = "\033[0m"


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel to send SIGTERM to the child when the launcher dies (Linux only).

    ``prctl`` is looked up here, in the parent, so that the child between fork and exec only makes one
    system call. Should the launcher already be gone by then, the child exits instead of running. The kernel
    sends the signal when the *thread* that started the child ends: the launcher starts every child from its
    main thread."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


DIE_WITH_PARENT = _die_with_parent()


def manage(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "manage.py", *args],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=capture,
        preexec_fn=DIE_WITH_PARENT,
    )


def ensure_secret_key(path: Path) -> None:
    """Write the embedded default's secret key once, before any child starts, so that every process of
    ``make run`` signs with the same key and sessions survive restarts (settings read the file)."""
    if os.environ.get("SECRET_KEY") or path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secrets.token_urlsafe(50))


def ensure_admin() -> None:
    code = (
        "from django.contrib.auth import get_user_model;"
        "import sys;"
        "U=get_user_model();"
        "sys.exit(0 if U.objects.filter(is_superuser=True).exists() else 3)"
    )
    exists = (
        subprocess.run([PY, "manage.py", "shell", "-c", code], cwd=ROOT, preexec_fn=DIE_WITH_PARENT).returncode == 0
    )
    if exists:
        print("An admin user exists already (its password was printed when it was created).")
        return
    password = secrets.token_urlsafe(12)
    env = {**os.environ, "DJANGO_SUPERUSER_PASSWORD": password}
    subprocess.run(
        [PY, "manage.py", "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@localhost"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        preexec_fn=DIE_WITH_PARENT,
    )
    banner = "=" * 64
    print(
        f"\n{banner}\n  Admin user created. Log in with\n    username: admin\n    password: {password}\n"
        f"  (shown once; change it at /admin/password_change/)\n{banner}\n",
        flush=True,
    )


def pump(name: str, color: str, stream: IO[str]) -> None:
    for line in iter(stream.readline, ""):
        sys.stdout.write(f"{color}{name:>7} |{RESET} {line}")
        sys.stdout.flush()


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    demo_port = int(os.environ.get("DEMO_AGENT_PORT", str(port + 1)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SITE_URL", f"http://127.0.0.1:{port}")
    var_dir = Path(os.environ.get("INBOX_VAR_DIR", ROOT / "var"))
    var_dir.mkdir(parents=True, exist_ok=True)
    ensure_secret_key(var_dir / "secret_key")

    # Set by the signal handlers, read by the loops below. A plain list, not a threading.Event: a handler runs in
    # the main thread between any two bytecodes, also inside the Event's own wait or set, and Event.set takes a
    # lock that is not reentrant. A second signal arriving while the first handler was in Event.set (`timeout`
    # signals make and then the whole process group; Ctrl-C reaches make and us) deadlocked the launcher, and
    # nothing was stopped. Appending to a list takes no lock.
    stopping: list[str] = []

    def stop(signum: int, _frame: Any) -> None:
        stopping.append(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)

    embedded = not os.environ.get("REDIS_URL")
    redis_process: subprocess.Popen | None = None
    if embedded:
        from config import embedded_redis

        redis_process = embedded_redis.start_child(var_dir, DIE_WITH_PARENT)
        print(f"Embedded Redis: {embedded_redis.redis_url(var_dir)}")

    manage("migrate", "--noinput", "-v", "0")
    ensure_admin()
    demo_available = (ROOT / "agents" / "demo.py").exists()
    if demo_available:
        try:
            manage("demo_setup", "--endpoint", f"http://127.0.0.1:{demo_port}/", capture=True)
        except subprocess.CalledProcessError as exc:
            print(f"Could not register the demo agent: {exc.stderr or exc}")
            demo_available = False

    commands = {
        "web": [
            PY,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ws",
            "websockets-sansio",
            "--no-access-log",
            "--timeout-graceful-shutdown",
            "10",
        ],
        "worker": [
            PY,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=INFO",
            "--concurrency=2",
            "-n",
            f"worker-{port}@%h",
        ],
        "beat": [
            PY,
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            "--loglevel=INFO",
            "--schedule",
            str(var_dir / "celerybeat-schedule"),
        ],
    }
    if demo_available:
        commands["demo"] = [PY, "-m", "agents.demo", "--port", str(demo_port)]

    processes: dict[str, subprocess.Popen] = {}
    for name, command in commands.items():
        if stopping:
            break
        processes[name] = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,  # Ctrl-C reaches only us; we stop the children in order
            preexec_fn=DIE_WITH_PARENT,  # and they die with us, even on kill -9
        )
    # The output threads start after every fork: a preexec_fn is safe only while this is the only thread.
    for index, (name, process) in enumerate(processes.items()):
        threading.Thread(target=pump, args=(name, COLORS[index % len(COLORS)], process.stdout), daemon=True).start()
    print(f"\nApproval Inbox is starting on http://127.0.0.1:{port}/  (Ctrl-C stops everything)\n", flush=True)

    exit_code = 0
    while not stopping:
        for name, process in processes.items():
            if process.poll() is not None:
                print(f"{name} exited with code {process.returncode}; stopping the rest.", flush=True)
                exit_code = process.returncode or 1
                stopping.append(name)
                break
        else:
            time.sleep(0.5)

    print("\nStopping…", flush=True)
    for process in processes.values():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    if embedded:
        from config import embedded_redis

        embedded_redis.stop(var_dir)
        if redis_process is not None:
            redis_process.wait(timeout=10)
    print("Stopped.")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
