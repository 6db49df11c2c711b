"""A port for a launcher's rendezvous (`torchrun --master-port`, MASTER_PORT).

Port 0 gets one of the system's ephemeral ports, which it hands again to the next socket that
asks for any port: gloo's connections in a test running beside this one (`pytest -n 2`) took
such a port between the probe's close and torchrun's listen (EADDRINUSE). A port below the
ephemeral range is never handed out that way: one is picked at random there and checked free."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Below the usual ephemeral range (32768-60999) and clear of torch's default rendezvous port
# and the fixed ports tests/runtime uses (29400-29799).
RANGES = ((15000, 29399), (29800, 32767))


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("localhost", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    below = _ephemeral_start()
    ports = [p for low, high in RANGES for p in range(low, min(high, below - 1) + 1)]
    pick = random.SystemRandom()
    for _ in range(50):
        port = pick.choice(ports) if ports else 0
        if port and _is_free(port):
            return port
    with socket.socket() as sock:  # no range left below the ephemeral one: ask the system
        sock.bind(("localhost", 0))
        return int(sock.getsockname()[1])
