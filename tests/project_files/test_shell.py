"""Shell scripts: what is found where, and what a rewrite changes -- on hostile shapes."""

from __future__ import annotations

from neuron_migrate.project_files.kinds import is_shell_shebang, kind_by_name
from tests.project_files.helpers import findings, rewritten, scan_error

NM702 = (
    "# TODO(neuron-migrate NM702): no native switch: cast the model (model.to(torch.bfloat16)) "
    'or use torch.autocast("neuron", dtype=torch.bfloat16) in the code, then drop this variable\n'
)
NM701 = "# TODO(neuron-migrate NM701): drop PJRT_DEVICE; nothing on the native path reads it\n"


def codes(text: str) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.col) for f in findings(text, "shell")]


def test_a_heredoc_body_is_data_not_script() -> None:
    text = "cat > env.sh <<'END'\nexport PJRT_DEVICE=NEURON\nEND\nexport PJRT_DEVICE=NEURON\n"
    assert codes(text) == [("NM701", 4, 7)]
    assert rewritten(text, "shell") == "cat > env.sh <<'END'\nexport PJRT_DEVICE=NEURON\nEND\n"


def test_prefix_assignments_across_line_continuations() -> None:
    text = (
        "PJRT_DEVICE=NEURON \\\n"
        "  XLA_USE_BF16=1 \\\n"
        "  torchrun --nproc_per_node=32 \\\n"
        "    train.py --bf16\n"
    )
    found = findings(text, "shell")
    assert [(f.code, f.line) for f in found] == [("NM701", 1), ("NM702", 2), ("NM422", 3)]
    assert "--nproc_per_node=32" in found[2].message
    assert rewritten(text, "shell") == (
        NM702 + "XLA_USE_BF16=1 \\\n  torchrun --nproc_per_node=32 \\\n    train.py --bf16\n"
    )


def test_quoted_and_escaped_values_and_several_names() -> None:
    text = (
        "export XLA_FLAGS='--xla_dump_to=/tmp/x y'\n"
        'export A="a \\"b\\"" PJRT_DEVICE=NEURON\n'
        "export PJRT_DEVICE=NEURON XLA_IR_DEBUG=1\n"
        "unset XLA_FLAGS PJRT_DEVICE\n"
    )
    assert rewritten(text, "shell") == 'export A="a \\"b\\""\n'


def test_a_statement_sharing_its_line_gets_a_marker() -> None:
    text = "export PJRT_DEVICE=NEURON; python train.py\n"
    assert rewritten(text, "shell") == NM701 + text


def test_a_variable_the_script_reads_is_not_dropped() -> None:
    text = 'export PJRT_DEVICE=NEURON\necho "device: ${PJRT_DEVICE:-none}"\n'
    assert rewritten(text, "shell") == NM701 + text


def test_columns_count_characters_not_bytes() -> None:
    text = 'echo "héllo wörld"; export XLA_USE_BF16=1\nexport PJRT_DEVICE=NEURON\n'
    assert codes(text) == [("NM702", 1, 27), ("NM701", 2, 7)]
    assert rewritten(text, "shell") == NM702 + 'echo "héllo wörld"; export XLA_USE_BF16=1\n'


def test_comments_and_strings_are_not_code() -> None:
    text = '# export PJRT_DEVICE=NEURON\necho "PJRT_DEVICE=NEURON torchrun"\n'
    assert codes(text) == []


def test_launchers_behind_wrappers() -> None:
    text = (
        "srun --nodes=2 env -u FOO XLA_USE_BF16=1 neuron_parallel_compile "
        "python3 -u -m torch.distributed.run --nproc-per-node $NPROC train.py\n"
        "nohup python -m torch_xla.distributed.xla_dist -- python train.py &\n"
    )
    found = findings(text, "shell")
    assert [f.code for f in found] == ["NM702", "NM420", "NM422", "NM421"]
    assert "--nproc_per_node=$NPROC" in found[2].message


def test_an_unparseable_script_is_an_error_with_a_line() -> None:
    assert scan_error("if then fi (\n", "shell") == "shell syntax error at line 1"


def test_the_rewrite_is_idempotent_and_changes_nothing_else() -> None:
    text = "#!/bin/bash\nset -euo pipefail\nexport XLA_USE_BF16=1\nexport PJRT_DEVICE=NEURON\n"
    once = rewritten(text, "shell")
    assert once == "#!/bin/bash\nset -euo pipefail\n" + NM702 + "export XLA_USE_BF16=1\n"
    assert rewritten(once, "shell") == once


def test_which_files_are_shell() -> None:
    assert kind_by_name("scripts/train.sh") == "shell"
    assert kind_by_name("slurm/job.sbatch") == "shell"
    assert kind_by_name("train.py") is None
    assert is_shell_shebang(b"#!/usr/bin/env bash\n")
    assert is_shell_shebang(b"#!/bin/sh -e\n")
    assert not is_shell_shebang(b"#!/usr/bin/env python3\n")


def test_instance_types_in_settings_not_in_messages() -> None:
    text = (
        'if [[ "$(curl -s $META/instance-type)" != "trn1.32xlarge" ]]; then\n'
        '    echo "run this on a trn1.32xlarge" >&2\n'
        "fi\n"
        "aws ec2 run-instances --instance-type inf2.48xlarge\n"
        "aws ec2 run-instances --instance-type trn2.48xlarge\n"
    )
    assert codes(text) == [("NM813", 1, 43), ("NM813", 4, 38)]


def test_suppressions_in_shell_comments() -> None:
    text = "export XLA_USE_BF16=1  # neuron-migrate: ignore[NM702] the code casts already\n"
    assert rewritten(text, "shell") == text


def test_declare_x_exports_and_local_does_not() -> None:
    text = "declare -x PJRT_DEVICE=NEURON\nlocal XLA_USE_BF16=1\ntypeset -rx XLA_FLAGS=--x\n"
    assert codes(text) == [("NM701", 1, 11), ("NM703", 3, 12)]
    assert rewritten(text, "shell") == "local XLA_USE_BF16=1\n"
