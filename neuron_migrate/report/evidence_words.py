"""A finding's message ends with the evidence keys its verdict rests on (`[dev-snapshot-dtype]`),
which the JSON report keeps for programs (docs/report-schema.md). A report for people says in
words what those are, from the titles of the matrix's evidence."""

from __future__ import annotations

import re
from collections.abc import Mapping

_KEYS = re.compile(r" \[([a-z0-9][a-z0-9.-]*(?:, [a-z0-9][a-z0-9.-]*)*)\]$")


def in_words(message: str, titles: Mapping[str, str]) -> str:
    """`message` with its trailing `[key, ...]` as `(rests on: title; ...)`; as it is when it
    names no key, or one the matrix does not describe."""
    found = _KEYS.search(message)
    if found is None:
        return message
    keys = found.group(1).split(", ")
    if not all(key in titles for key in keys):
        return message
    return f"{message[: found.start()]} (rests on: {'; '.join(titles[key] for key in keys)})"


def evidence_titles(version: str) -> dict[str, str]:
    """The title of each evidence key of the matrix `version`; empty when it cannot be read."""
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.matrix import load_matrix

    try:
        matrix = load_matrix(version)
    except NeuronMigrateError:
        return {}
    return {key: evidence.title for key, evidence in matrix.evidence.items()}
