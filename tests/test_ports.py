"""The rendezvous port the e2e tests hand torchrun is never one the system hands out to others."""

from __future__ import annotations

from tests import ports


def test_a_free_port_is_free_and_below_the_ephemeral_range() -> None:
    picked = {ports.free_port() for _ in range(20)}
    assert all(port < ports._ephemeral_start() and ports._is_free(port) for port in picked)
    assert len(picked) > 1  # picked at random, not the first free one
