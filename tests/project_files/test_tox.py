"""tox.ini: the deps, setenv, commands and basepython of each testenv section are read where
they are; a bad file is one line of error."""

from __future__ import annotations

from tests.project_files.helpers import findings, rewritten, scan_error

TOX = """\
[tox]
envlist = py310, neuron

[testenv]
basepython = python3.10
deps =
    pytest>=8
    neuron: torch-xla==2.1.2   # the XLA build
setenv =
    PJRT_DEVICE = NEURON
    XLA_USE_BF16=1
commands =
    neuron_parallel_compile pytest {posargs}

[testenv:lint]
setenv = PJRT_DEVICE=CPU
deps = ruff
commands = ruff check .
"""


def test_tox_findings_carry_line_and_column() -> None:
    found = [(f.code, f.api, f.line, f.col) for f in findings(TOX, "tox")]
    assert found == [
        ("NM812", "requires-python:==3.10.*", 5, 13),
        ("NM810", "package:torch-xla", 8, 12),
        ("NM701", "xla-env-var:PJRT_DEVICE", 10, 4),
        ("NM702", "xla-env-var:XLA_USE_BF16", 11, 4),
        ("NM420", "command:neuron_parallel_compile", 13, 4),
        ("NM701", "xla-env-var:PJRT_DEVICE", 16, 9),
    ]


def test_a_setenv_line_of_its_own_is_dropped_one_on_the_keys_line_is_marked() -> None:
    new = rewritten(TOX, "tox")
    assert "    PJRT_DEVICE = NEURON\n" not in new
    assert "# TODO(neuron-migrate NM701)" in new.split("[testenv:lint]")[1]
    assert "setenv = PJRT_DEVICE=CPU\n" in new
    assert rewritten(new, "tox") == new


def test_a_variable_the_file_reads_is_kept() -> None:
    text = "[testenv]\nsetenv =\n    PJRT_DEVICE = NEURON\ncommands = echo {env:PJRT_DEVICE}\n"
    assert "    PJRT_DEVICE = NEURON\n" in rewritten(text, "tox")


def test_a_file_the_ini_parser_refuses_is_one_line() -> None:
    reason = scan_error("[testenv]\ndeps = torch\ndeps = torch-xla\n[testenv\n", "tox")
    assert reason is not None and reason.startswith("invalid tox.ini") and "\n" not in reason
