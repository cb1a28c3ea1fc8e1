"""Child processes of the e2e tests: started in their own process group, logged to a file,
always stopped.

Decides: how a component runs (its own session, so a signal reaches its children too;
stdout and stderr into one log file), how it stops (SIGTERM to the group, SIGKILL after
a grace period, or SIGKILL at once for a crash test), and the safety net: every started
process is registered, and an `atexit` hook kills whatever a failed or interrupted test
left running. Also free loopback ports and log tails for failure messages.

Must not: know what a component is (controlplane.py and headstart.py do).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_RUNNING: dict[int, Process] = {}


def free_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on 127.0.0.1 (all held open until all are chosen)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a log file ("" when it does not exist)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 256 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Process:
    """One started binary. `argv` and `env` are kept so it can be started again as it was."""

    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path,
        env: Mapping[str, str] | None = None, cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = [str(arg) for arg in argv]
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.popen: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> Process:
        if self.alive():
            raise RuntimeError(f"{self.name} is already running (pid {self.popen.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            if self.starts:
                log.write(f"\n===== restart {self.starts} =====\n".encode())
                log.flush()
            self.popen = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, cwd=self.cwd, start_new_session=True,
            )
        self.starts += 1
        _RUNNING[self.popen.pid] = self
        return self

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def exit_code(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the process group; SIGKILL it after `grace_s` seconds. Idempotent."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.popen.wait(10)
        self._reap_group()
        _RUNNING.pop(self.popen.pid, None)

    def kill(self) -> None:
        """SIGKILL the whole process group at once (a crash, as `kill -9` does)."""
        if self.popen is None:
            return
        self._signal(signal.SIGKILL)
        self.popen.wait(10)
        _RUNNING.pop(self.popen.pid, None)

    def tail(self, lines: int = 30) -> str:
        return tail(self.log_path, lines)

    def _signal(self, signum: int) -> None:
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signum)

    def _reap_group(self) -> None:
        # A child the leader left behind (none of ours fork, but be sure): kill the group.
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)


def wait_exited(processes: Sequence[Process], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(p.alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)


def stop_all(processes: Sequence[Process], grace_s: float = 5.0) -> None:
    """SIGTERM all at once, wait up to `grace_s`, SIGKILL the rest (a disposable cluster
    needs no ordered shutdown)."""
    for process in processes:
        if process.alive():
            process._signal(signal.SIGTERM)
    wait_exited(processes, grace_s)
    for process in processes:
        process.stop(grace_s=0.0)


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit in this (main) process, so `finally` blocks, fixture
    teardown and the atexit hook stop the children: by default SIGTERM ends Python at
    once and the children, each in its own session, would live on. Leaves a handler
    someone else installed alone."""
    import threading

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _raise_system_exit)


def _raise_system_exit(signum: int, frame: object) -> None:
    # Once: a second SIGTERM (`timeout` forwards the one its process group got) must not
    # interrupt the cleanup the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_RUNNING.values()):
        process.kill()
