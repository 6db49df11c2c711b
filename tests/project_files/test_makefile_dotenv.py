"""Makefiles (recipe shell, `export NAME = value`) and .env files: the XLA-era variables and
launchers are found at their line and column, and rewritten as in a shell script: an unread
PJRT_DEVICE goes with its whole line, a renamed variable is renamed, the rest gets a marker."""

from __future__ import annotations

from neuron_migrate.ruleset import load_ruleset
from tests.project_files.helpers import findings, rewritten, scan_error


def _marker(code: str) -> str:
    return f"# TODO(neuron-migrate {code}): {load_ruleset().get(code).file_message()}"


NM702, NM420, NM710 = _marker("NM702"), _marker("NM420"), _marker("NM710")

MAKEFILE = """\
# Train on Trainium.
export PJRT_DEVICE ?= NEURON
export XLA_USE_BF16 = 1
STEPS := 20

.PHONY: train compile
train:
\t@export PJRT_DEVICE=TPU
\tNEURON_FRAMEWORK_DEBUG=1 torchrun --nproc_per_node=32 train.py \\
\t    --steps $(STEPS)

compile:
\t-neuron_parallel_compile python train.py --steps 2
"""

MAKEFILE_AFTER = f"""\
# Train on Trainium.
{NM702}
export XLA_USE_BF16 = 1
STEPS := 20

.PHONY: train compile
train:
\tTORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 torchrun --nproc_per_node=32 train.py \\
\t    --steps $(STEPS)

compile:
{NM420}
\t-neuron_parallel_compile python train.py --steps 2
"""


def test_makefile_findings_carry_line_and_column() -> None:
    found = [(f.code, f.api, f.line, f.col) for f in findings(MAKEFILE, "makefile")]
    assert found == [
        ("NM701", "xla-env-var:PJRT_DEVICE", 2, 7),
        ("NM702", "xla-env-var:XLA_USE_BF16", 3, 7),
        ("NM701", "xla-env-var:PJRT_DEVICE", 8, 9),
        ("NM705", "xla-env-var:NEURON_FRAMEWORK_DEBUG", 9, 1),
        ("NM422", "torchrun:torchrun", 9, 26),
        ("NM420", "command:neuron_parallel_compile", 13, 2),
    ]


def test_makefile_rewrite_drops_renames_and_marks_as_make_reads_it() -> None:
    assert rewritten(MAKEFILE, "makefile") == MAKEFILE_AFTER
    assert rewritten(MAKEFILE_AFTER, "makefile") == MAKEFILE_AFTER


def test_a_variable_the_makefile_reads_is_marked_not_dropped() -> None:
    text = "export PJRT_DEVICE = NEURON\nrun:\n\techo $(PJRT_DEVICE)\n"
    new = rewritten(text, "makefile")
    assert "export PJRT_DEVICE = NEURON\n" in new
    assert "# TODO(neuron-migrate NM701)" in new


def test_make_syntax_the_shell_grammar_does_not_know_is_passed_over() -> None:
    text = "run:\n\t$(if $(X),export PJRT_DEVICE=NEURON,) ) (\n\ttorchrun train.py\n"
    assert scan_error(text, "makefile") is None
    assert [f.code for f in findings(text, "makefile")] == ["NM422"]


DOTENV = """\
# local settings
export PJRT_DEVICE=TPU
XLA_USE_BF16=1
NEURON_CC_FLAGS="--model-type=transformer
  --enable-fast-loading-neuron-binaries"
NEURON_RT_VISIBLE_CORES=0-31
not an assignment
"""

DOTENV_AFTER = f"""\
# local settings
{NM702}
XLA_USE_BF16=1
{NM710}
NEURON_CC_FLAGS="--model-type=transformer
  --enable-fast-loading-neuron-binaries"
NEURON_RT_VISIBLE_CORES=0-31
not an assignment
"""


def test_dotenv_findings_and_rewrite() -> None:
    found = [(f.code, f.line, f.col, f.status) for f in findings(DOTENV, "dotenv")]
    assert found == [
        ("NM701", 2, 7, "xla"),
        ("NM702", 3, 0, "xla"),
        ("NM710", 4, 0, "advice"),
        ("NM711", 6, 0, "advice"),
    ]
    assert rewritten(DOTENV, "dotenv") == DOTENV_AFTER
    assert rewritten(DOTENV_AFTER, "dotenv") == DOTENV_AFTER


def test_a_dotenv_variable_read_by_interpolation_is_kept() -> None:
    text = "PJRT_DEVICE=NEURON\nDEVICE=${PJRT_DEVICE}\n"
    assert rewritten(text, "dotenv").endswith(text)
    assert "TODO(neuron-migrate NM701)" in rewritten(text, "dotenv")


def test_a_recipe_line_the_shell_grammar_misreads_is_marked_never_edited() -> None:
    text = "run:\n\tPJRT_DEVICE=NEURON python x.py $(if a,b,c)) \n"
    new = rewritten(text, "makefile")
    assert new.endswith(text.split("\n", 1)[1])
    assert "# TODO(neuron-migrate NM701)" in new
