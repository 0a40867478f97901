"""``make run``: the whole product on one machine.

Prepares ``var/`` (secret key, embedded Redis, migrations, the admin user and the demo agent), then runs the web
server, a Celery worker, beat and the demo agent with prefixed output, restarting a child that dies. Children
never outlive it (their own sessions and ``PR_SET_PDEATHSIG``; docs/operations.md). The production process
types are in the ``Procfile``."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config import queues

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
COLORS = ["\033[36m", "\033[35m", "\033[33m", "\033[32m", "\033[34m"]
RESET = "\033[0m"


PR_SET_PDEATHSIG = 1


def celery(log_level: str) -> list[str]:
    """``python -m celery -A config``; ``--quiet`` below INFO: without it the worker and beat each print a banner
    of about 20 lines (versions, transport, queues), which pushed the ready banner past the first screen."""
    quiet = ["--quiet"] if log_level not in {"DEBUG", "INFO"} else []
    return [PY, "-m", "celery", "-A", "config", *quiet]


def celery_worker(name: str, log_level: str, consumed: list[str], pool: str) -> list[str]:
    """The command of a Celery worker called ``name`` consuming ``consumed``."""
    return [
        *celery(log_level),
        "worker",
        f"--loglevel={log_level}",
        pool,
        "-Q",
        ",".join(consumed),
        "-n",
        f"{name}@%h",
    ]


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

RESTART_FIRST_DELAY = 1.0  # seconds before a dead child is started again; doubles per quick death
RESTART_MAX_DELAY = 30.0
RESTART_STABLE_AFTER = 60.0  # a child that ran this long died unexpectedly once: back to the first delay
READY_NOTE_EVERY = 30.0  # seconds between the "still starting" lines while /healthz does not answer 200


def watch_parent() -> int:
    """Ask for SIGTERM when our parent (``make``, a shell, a supervisor) dies, as the children do for us.
    Returns the parent's pid, which the main loop also compares with ``getppid()`` (other platforms, and the
    parent that died before the request)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    return parent


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


ADMIN_PASSWORD_FILE = "admin-password"  # in the var dir, 0600: the first run's admin password, until changed


def ensure_admin(var_dir: Path) -> str:
    """Create the ``admin`` superuser the first time, its random password printed once and kept in
    ``var/admin-password`` (mode 0600) so the ready banner can show it again. Returns the banner's login line:
    the password while the file still holds it, otherwise how to set a new one."""
    password_file = var_dir / ADMIN_PASSWORD_FILE
    reset = "reset it with: .venv/bin/python manage.py changepassword admin"
    # Exit 0: an admin whose password is the file's; 4: an admin with another password; 3: no superuser.
    code = (
        "import sys, pathlib;"
        "from django.contrib.auth import get_user_model;"
        "U=get_user_model();"
        "import os;"
        "f=pathlib.Path(os.environ['INBOX_ADMIN_PASSWORD_FILE']);"
        "a=U.objects.filter(username='admin').first();"
        "sys.exit(3 if not U.objects.filter(is_superuser=True).exists() else "
        "0 if a and f.exists() and a.check_password(f.read_text().strip()) else 4)"
    )
    state = subprocess.run(
        [PY, "manage.py", "shell", "-v", "0", "-c", code],  # -v 0: no "43 objects imported automatically"
        cwd=ROOT,
        env={**os.environ, "INBOX_ADMIN_PASSWORD_FILE": str(password_file)},
        preexec_fn=DIE_WITH_PARENT,
    ).returncode
    if state not in (0, 3, 4):
        raise RuntimeError(f"could not read the admin user (manage.py shell exited {state})")
    if state == 0:
        return f"log in as admin, password {password_file.read_text().strip()}  (kept in {password_file}; {reset})"
    if state != 3:
        password_file.unlink(missing_ok=True)  # it no longer opens anything
        return f"log in with your admin account; forgot the password? {reset}"
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
    descriptor = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(password)
    banner = "=" * 64
    print(
        f"\n{banner}\n  Admin user created. Log in with\n    username: admin\n    password: {password}\n"
        f"  (also kept in {password_file} until you change it at /admin/password_change/)\n{banner}\n",
        flush=True,
    )
    return f"log in as admin, password {password}  (kept in {password_file}; {reset})"


def health(port: int) -> tuple[bool, str]:
    """Whether the web server answers ``/healthz`` with 200 (web, database, Redis, a worker and beat up); if not,
    why in a few words ("no answer yet", "down: worker, beat")."""
    try:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an http_proxy
        with direct.open(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return response.status == 200, f"answered {response.status}"
    except urllib.error.HTTPError as exc:
        try:
            down = json.loads(exc.read()).get("down") or []
        except (ValueError, AttributeError, OSError):
            down = []
        return False, f"down: {', '.join(map(str, down))}" if down else f"answered {exc.code}"
    except (OSError, ValueError):
        return False, "no answer yet"


@dataclass
class Child:
    """One process of ``make run``: started, its output prefixed, started again when it dies."""

    name: str
    command: list[str]
    color: str
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    restart_at: float | None = None
    partial: bytes = field(default=b"", repr=False)

    def start(self, selector: selectors.BaseSelector) -> None:
        self.process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only us; we stop the children in order
            preexec_fn=DIE_WITH_PARENT,  # and they die with us, even on kill -9
        )
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), False)
        selector.register(self.process.stdout, selectors.EVENT_READ, self)
        self.started_at, self.restart_at = time.monotonic(), None

    def pump(self) -> bool:
        """Print what the child wrote; False at the end of its output."""
        assert self.process is not None and self.process.stdout is not None
        try:
            chunk = os.read(self.process.stdout.fileno(), 65536)
        except BlockingIOError:
            return True
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        if not chunk and self.partial:
            lines, self.partial = [*lines, self.partial], b""
        for line in lines:
            text = line.decode(errors="replace")
            sys.stdout.write(f"{self.color}{self.name:>7} |{RESET} {text}\n")
        sys.stdout.flush()
        return bool(chunk)

    def died(self, selector: selectors.BaseSelector) -> None:
        """The child exited: drain its output, then schedule its restart with a backoff."""
        assert self.process is not None and self.process.stdout is not None
        while self.pump():
            pass
        try:
            selector.unregister(self.process.stdout)
        except KeyError:  # unregistered when its output ended
            pass
        self.process.stdout.close()
        ran = time.monotonic() - self.started_at
        if ran >= RESTART_STABLE_AFTER:
            self.quick_deaths = 0
        delay = min(RESTART_MAX_DELAY, RESTART_FIRST_DELAY * 2**self.quick_deaths)
        self.quick_deaths += 1
        print(
            f"{self.name} exited with code {self.process.returncode} after {ran:.0f} s; "
            f"starting it again in {delay:g} s",
            flush=True,
        )
        self.process, self.restart_at = None, time.monotonic() + delay


def supervise(
    children: list[Child],
    selector: selectors.BaseSelector,
    stopping: list[str],
    parent: int,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Until a signal (or our parent's death): print the children's output, start again those that died.
    ``ready`` is called each turn until it returns True (the ready banner, once the web server answers)."""
    while not stopping:
        if ready is not None and ready():
            ready = None
        for key, _events in selector.select(timeout=0.5):
            if not key.data.pump():  # its output ended; it exits (seen below) or runs on silent
                selector.unregister(key.fileobj)
        for child in children:
            if child.process is not None and child.process.poll() is not None:
                child.died(selector)
            elif child.process is None and child.restart_at is not None and time.monotonic() >= child.restart_at:
                print(f"starting {child.name} again", flush=True)
                child.start(selector)
        if os.getppid() != parent:
            print("the launcher's parent is gone", flush=True)
            stopping.append("parent gone")


def web_processes() -> int:
    """``WEB_PROCESSES`` uvicorn worker processes; by default two on PostgreSQL (ingest and pages use both cores)
    and one on SQLite, which takes one writer at a time (a second web process would only wait on its lock)."""
    default = 2 if os.environ.get("DATABASE_URL") else 1
    value = os.environ.get("WEB_PROCESSES", "").strip()
    if not value:
        return default
    if not value.isdigit() or not 1 <= int(value) <= 64:
        raise SystemExit(f"WEB_PROCESSES must be a whole number from 1 to 64, not {value!r}")
    return int(value)


def stop_children(children: list[Child]) -> None:
    """SIGTERM to each child's process group, SIGKILL to those still running 15 s later."""
    print("\nStopping…", flush=True)
    processes = [child.process for child in children if child.process is not None]
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    for child in children:  # what they wrote while stopping
        if child.process is not None and child.process.stdout is not None and not child.process.stdout.closed:
            while child.pump():
                pass


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    demo_port = int(os.environ.get("DEMO_AGENT_PORT", str(port + 1)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SITE_URL", f"http://127.0.0.1:{port}")
    var_dir = Path(os.environ.get("INBOX_VAR_DIR", ROOT / "var"))
    var_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # it holds the database and the secret key
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
    parent = watch_parent()  # after the handlers: the parent's death is a SIGTERM, handled like the others

    embedded = not os.environ.get("REDIS_URL")
    redis_process: subprocess.Popen | None = None
    if embedded:
        from config import embedded_redis

        redis_process = embedded_redis.start_child(var_dir, DIE_WITH_PARENT)
        print(f"Embedded Redis: {embedded_redis.redis_url(var_dir)}")

    manage("migrate", "--noinput", "-v", "0")
    login = ensure_admin(var_dir)
    # Quiet by default: the tasks' chatter would push everything a person needs out of sight.
    log_level = os.environ.setdefault("LOG_LEVEL", "WARNING").upper()
    # Celery warns in 8 lines, in the worker and again in the deadlines worker, when it runs as root (as in most
    # containers). The warning is about accepting pickle, which the inbox never does (JSON only, config/celery.py;
    # with pickle Celery refuses to start as root, which stays): for `make run` it was only lines to scroll past.
    os.environ["PYTHONWARNINGS"] = ",".join(
        filter(None, [os.environ.get("PYTHONWARNINGS"), "ignore:You're running the worker with superuser privileges"])
    )
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
            "--no-proxy-headers",  # the client's address is agents.addresses.client_address's to decide
            "--no-access-log",
            "--log-level",
            log_level.lower(),
            "--timeout-graceful-shutdown",
            "10",
            "--workers",
            str(web_processes()),
        ],
        # Every queue, deadlines included (a free process takes whatever is waiting)...
        "worker": celery_worker(f"worker-{port}", log_level, queues.every(), "--concurrency=2"),
        # ...and one process for the deadlines alone: Redis serves a worker's queues in turn, not in -Q order, so
        # only a worker of their own never makes an expiry or an escalation wait behind a resume or an e-mail.
        "deadlines": celery_worker(f"deadlines-{port}", log_level, [queues.name("deadlines")], "--pool=solo"),
        "beat": [
            *celery(log_level),
            "beat",
            f"--loglevel={log_level}",
            "--schedule",
            str(var_dir / "celerybeat-schedule"),
        ],
    }
    if demo_available:
        commands["demo"] = [PY, "-m", "agents.demo", "--port", str(demo_port)]

    selector = selectors.DefaultSelector()
    children = [
        Child(name, command, COLORS[index % len(COLORS)]) for index, (name, command) in enumerate(commands.items())
    ]
    for child in children:
        if stopping:
            break
        child.start(selector)
    print(f"\nApproval Inbox is starting on http://127.0.0.1:{port}/  (Ctrl-C stops everything)\n", flush=True)

    waiting_since = time.monotonic()
    said_at = waiting_since

    def announce_ready() -> bool:
        nonlocal said_at
        answered, why = health(port)
        if not answered:
            # The web server's own log keeps quiet about /healthz (config.health.QuietProbes): once in a while say
            # here what it waits for, so that a worker that cannot start is not a silent wait.
            if time.monotonic() - said_at >= READY_NOTE_EVERY:
                said_at = time.monotonic()
                print(f"Still starting after {said_at - waiting_since:.0f} s: /healthz {why}", flush=True)
            return False
        banner = "=" * 64
        mail_dir = os.environ.get("EMAIL_FILE_PATH") or str(var_dir / "mail")
        lines = [
            f"Approval Inbox is ready: http://127.0.0.1:{port}/",
            login,
            *([f"The demo agent: http://127.0.0.1:{demo_port}/ (Agents → Demo agent)"] if demo_available else []),
            *(
                [f"Dev e-mails are not sent: one line each here, the messages in {mail_dir}/"]
                if not os.environ.get("EMAIL_BACKEND")
                else []
            ),
            f"Logs: {log_level} and above; LOG_LEVEL=INFO make run shows more.",
            "Ctrl-C stops everything.",
        ]
        print(f"\n{banner}\n" + "".join(f"  {line}\n" for line in lines) + f"{banner}\n", flush=True)
        return True

    supervise(children, selector, stopping, parent, announce_ready)
    stop_children(children)
    if embedded:
        from config import embedded_redis

        embedded_redis.stop(var_dir)
        if redis_process is not None:
            redis_process.wait(timeout=10)
    print("Stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
