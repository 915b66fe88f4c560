"""What the development servers share: a free loopback port outside the kernel's ephemeral range, and stopping
a server started in a process group of its own."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
from pathlib import Path


class ServerError(RuntimeError):
    """A development server could not be resolved, started or given a port."""


#: Where the kernel picks the ports of sockets bound to port 0 when ``ip_local_port_range`` cannot be read
EPHEMERAL = (32768, 60999)
#: The lowest port ``free_port`` hands out
LOWEST_PORT = 10000


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The kernel's range of ports for sockets bound to port 0 (Linux), else ``EPHEMERAL``."""
    try:
        low, high = (int(x) for x in Path(path).read_text().split())
        return low, high
    except (OSError, ValueError):
        return EPHEMERAL


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Stop a server started in a session of its own: SIGTERM to its process group, then SIGKILL after
    ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def free_port(rng: random.Random | None = None, span: tuple[int, int] | None = None) -> int:
    """A free loopback port for a server qmon starts (the local broker, a Spark master or worker), outside
    the kernel's ephemeral range.  A client of a server that has stopped (Spark caches its Kafka producers
    for minutes) keeps connecting to that server's port; had the port been ephemeral, the kernel could
    hand it to a socket Spark binds to port 0 for a Python worker to connect back to, and the stray client
    connecting first fails that worker's handshake ("Python worker failed to connect back. ...
    Authentication failed", seen in the tests).  Ports below the range are never handed out that way."""
    rng = rng or random.SystemRandom()
    low, high = span or ephemeral_range()
    candidates = range(LOWEST_PORT, low) if low > LOWEST_PORT + 1000 else range(high + 1, 65536)
    for _ in range(200):
        port = rng.choice(candidates)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ServerError(f"no free loopback port in {candidates.start}-{candidates.stop - 1}")
