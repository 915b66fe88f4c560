"""Ports for the servers qmon starts (the local broker, a Spark master and workers, the tests' Prometheus and
Alertmanager): free, and outside the kernel's ephemeral range, so a client still connecting to a stopped
server's port never reaches a socket Spark bound to port 0 for a Python worker's handshake."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from qmon.devservers.local import EPHEMERAL, LOWEST_PORT, ephemeral_range, free_port


def test_a_port_below_the_ephemeral_range_that_a_server_can_bind():
    low, high = ephemeral_range()
    for _ in range(20):
        port = free_port()
        assert LOWEST_PORT <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_above_the_range_when_it_starts_too_low_and_a_taken_port_is_skipped():
    rng = random.Random(7)
    assert free_port(rng, (10_500, 60_000)) > 60_000
    taken = free_port(random.Random(1), (32768, 60999))
    with socket.socket() as s:
        s.bind(("127.0.0.1", taken))
        s.listen()
        assert free_port(random.Random(1), (32768, 60999)) != taken  # the same draw first, then another


def test_the_kernels_range_is_read_and_a_missing_or_odd_file_gives_linuxs_default(tmp_path: Path):
    path = tmp_path / "ip_local_port_range"
    path.write_text("40000\t50000\n")
    assert ephemeral_range(str(path)) == (40000, 50000)
    path.write_text("garbage")
    assert ephemeral_range(str(path)) == EPHEMERAL
    assert ephemeral_range(str(tmp_path / "none")) == EPHEMERAL
