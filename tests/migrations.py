"""Which sources a test's rewrites migrate: what a cache hit must not do."""

from __future__ import annotations

import pytest

from neuron_migrate.rewrite import rewriter


def counted_migrations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources `rewrite_source` migrates in this process from now on (and in workers
    forked from it, which do not report back: count with one job)."""
    seen: list[str] = []
    original = rewriter.rewrite_source

    def counted(source: str, *args, **kwargs):
        seen.append(source)
        return original(source, *args, **kwargs)

    monkeypatch.setattr(rewriter, "rewrite_source", counted)
    return seen
