"""Shared helpers: scan or rewrite a project file's text with the bundled rules."""

from __future__ import annotations

from neuron_migrate.project_files.resolve import Target
from neuron_migrate.project_files.rewrite import rewrite_project_text
from neuron_migrate.project_files.scan import scan_project_file
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.findings import Finding

TARGET = Target("2.14.3.1", "2.14.0")  # the newest: the default target
FILE_NAMES = {
    "shell": "run.sh",
    "makefile": "Makefile",
    "dotenv": ".env",
    "dockerfile": "Dockerfile",
    "yaml": "job.yaml",
    "json": "job.json",
    "requirements": "requirements.txt",
    "pyproject": "pyproject.toml",
    "pipfile": "Pipfile",
    "setup-cfg": "setup.cfg",
    "setup-py": "setup.py",
    "tox": "tox.ini",
    "conda": "environment.yml",
}


def findings(text: str, kind: str) -> list[Finding]:
    result = scan_project_file(text, FILE_NAMES[kind], kind, load_ruleset().rules, TARGET)
    assert result.error is None, result.error
    return list(result.findings)


def scan_error(text: str, kind: str) -> str | None:
    result = scan_project_file(text, FILE_NAMES[kind], kind, load_ruleset().rules, TARGET)
    return None if result.error is None else result.error.reason


def rewritten(text: str, kind: str, *, unsafe: bool = False) -> str:
    return rewrite_project_text(text, kind, load_ruleset().rules, TARGET, unsafe=unsafe).text
