"""Dockerfiles: instructions, continuations, heredocs, exec forms and ENV's two forms."""

from tests.project_files.helpers import findings, rewritten, scan_error

NM702 = (
    "# TODO(neuron-migrate NM702): no native switch: cast the model (model.to(torch.bfloat16)) "
    'or use torch.autocast("neuron", dtype=torch.bfloat16) in the code, then drop this variable\n'
)
DOCKERFILE = """\
# syntax=docker/dockerfile:1
FROM --platform=linux/amd64 ubuntu:26.04 AS build
ENV A="x \\"y\\"" PJRT_DEVICE=NEURON
ENV XLA_IR_DEBUG 1
RUN pip install -r requirements.txt \\
    # a comment inside the continuation
    && export XLA_USE_BF16=1 && python warm.py
RUN <<SCRIPT
export PJRT_DEVICE=NEURON
torchrun --nproc_per_node 2 t.py
SCRIPT
CMD ["torchrun", "--nproc_per_node=32", "train.py"]
"""


def test_what_is_found_where() -> None:
    found = [(f.code, f.line, f.col) for f in findings(DOCKERFILE, "dockerfile")]
    assert found == [
        ("NM701", 3, 16),
        ("NM703", 4, 4),
        ("NM702", 7, 14),
        ("NM701", 9, 7),
        ("NM422", 10, 0),
        ("NM422", 12, 4),
    ]


def test_the_rewrite_edits_values_runs_and_heredocs_in_place() -> None:
    assert rewritten(DOCKERFILE, "dockerfile") == (
        "# syntax=docker/dockerfile:1\n"
        "FROM --platform=linux/amd64 ubuntu:26.04 AS build\n"
        'ENV A="x \\"y\\""\n' + NM702 + "RUN pip install -r requirements.txt \\\n"
        "    # a comment inside the continuation\n"
        "    && export XLA_USE_BF16=1 && python warm.py\n"
        "RUN <<SCRIPT\n"
        "torchrun --nproc_per_node 2 t.py\n"
        "SCRIPT\n"
        'CMD ["torchrun", "--nproc_per_node=32", "train.py"]\n'
    )


def test_a_variable_the_file_reads_is_not_dropped() -> None:
    text = "ARG PJRT_DEVICE=NEURON\nRUN echo $PJRT_DEVICE\n"
    assert rewritten(text, "dockerfile").startswith("# TODO(neuron-migrate NM701)")


def test_an_unclosed_heredoc_is_an_error() -> None:
    assert scan_error("RUN <<EOF\necho hi\n", "dockerfile") == "heredoc EOF is not closed (line 1)"
    assert scan_error("FROM x\nnot an instruction!\n", "dockerfile") == (
        "not a Dockerfile instruction at line 2"
    )
