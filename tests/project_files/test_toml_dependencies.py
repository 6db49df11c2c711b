"""Poetry (`[tool.poetry.dependencies]` and its groups in pyproject.toml) and Pipfile
dependencies: XLA-era packages, torch / torch-neuronx pins that exclude the target's pair and
Python floors below 3.12 are reported at their entry; a pin fix (unsafe) replaces only the bytes
of the version string, in the file's own syntax."""

from __future__ import annotations

import pytest

from neuron_migrate.project_files.toml_deps import poetry_to_pep440
from tests.project_files.helpers import findings, rewritten, scan_error

POETRY = """\
[tool.poetry]
name = "train"  # the job

[tool.poetry.dependencies]
python = "^3.10"
torch = "2.1.2"   # XLA build pairs with this
torch-xla = {version = "2.1.2", extras = ["neuron"]}
"torch-neuronx" = { version = "2.1.2.2.3.0", source = "neuron" }
numpy = "*"

[tool.poetry.group.dev.dependencies]
libneuronxla = "2.0.*"

[tool.poetry.dependencies.neuronx-distributed]
version = "0.7"
"""

PIPFILE = """\
[[source]]
url = "https://pypi.org/simple"
name = "pypi"

[packages]
torch = "==2.9.0"
torch-xla = {version = "==2.1.2", index = "pypi"}
torch-neuronx = "*"

[dev-packages]
pytest = ">=8"

[requires]
python_version = "3.10"
"""


def _found(text: str, kind: str) -> list[tuple[str, str, int, int]]:
    return [(f.code, f.api, f.line, f.col) for f in findings(text, kind)]


def test_poetry_entries_are_found_where_they_are() -> None:
    assert _found(POETRY, "pyproject") == [
        ("NM812", "requires-python:>=3.10,<4", 5, 0),
        ("NM811", "package-pin:torch", 6, 0),
        ("NM810", "package:torch-xla", 7, 0),
        ("NM811", "package-pin:torch-neuronx", 8, 0),
        ("NM810", "package:libneuronxla", 12, 0),
        ("NM810", "package:neuronx-distributed", 15, 0),
    ]


def test_a_poetry_pin_is_rewritten_in_poetrys_syntax_and_nothing_else_moves() -> None:
    new = rewritten(POETRY, "pyproject", unsafe=True)
    assert 'torch = "2.14.0"   # XLA build pairs with this\n' in new
    assert '"torch-neuronx" = { version = "2.14.*", source = "neuron" }\n' in new
    untouched = [
        line for line in POETRY.splitlines() if "torch =" not in line and 'neuronx" =' not in line
    ]
    assert all(line in new.splitlines() for line in untouched)
    assert rewritten(new, "pyproject", unsafe=True) == new


def test_poetry_caret_that_admits_the_pair_is_not_a_pin_finding() -> None:
    text = '[tool.poetry.dependencies]\npython = "^3.12"\ntorch = "^2.13"\n'
    assert _found(text, "pyproject") == []


def test_pipfile_entries_are_found_where_they_are() -> None:
    assert _found(PIPFILE, "pipfile") == [
        ("NM811", "package-pin:torch", 6, 0),
        ("NM810", "package:torch-xla", 7, 0),
        ("NM812", "requires-python:==3.10.*", 14, 18),
    ]


def test_a_pipfile_pin_is_rewritten_and_a_star_is_left() -> None:
    new = rewritten(PIPFILE, "pipfile", unsafe=True)
    assert 'torch = "==2.14.0"\n' in new
    assert 'torch-neuronx = "*"\n' in new
    assert rewritten(new, "pipfile", unsafe=True) == new


def test_invalid_toml_is_one_line() -> None:
    reason = scan_error("[packages]\ntorch = \n", "pipfile")
    assert reason is not None and reason.startswith("invalid TOML") and "\n" not in reason


@pytest.mark.parametrize(
    ("poetry", "pep440"),
    [
        ("^2.1.2", ">=2.1.2,<3"),
        ("^0.2.3", ">=0.2.3,<0.3"),
        ("^3.10", ">=3.10,<4"),
        ("~2.1.2", ">=2.1.2,<2.2"),
        ("~2", ">=2,<3"),
        ("2.1.*", "==2.1.*"),
        ("2.1.2", "==2.1.2"),
        (">=2.1, <3", ">=2.1,<3"),
        (">=2.1 <3", ">=2.1,<3"),
        ("*", ""),
        ("^3.8 || ^3.9", None),
        ("latest", None),
    ],
)
def test_poetry_constraints_in_pep440(poetry: str, pep440: str | None) -> None:
    assert poetry_to_pep440(poetry) == pep440
