"""What a variable is set to changes what a rule says of it (a rule's `values:`).

NM702: `XLA_USE_BF16=0` or `unset XLA_DOWNCAST_BF16` kept float32 under torch_xla, as the native
runtime computes: there is no bfloat16 cast to write, only the variable to drop. NM706:
NEURON_COMPILE_CACHE_URL also took S3 URLs, and TORCH_NEURONX_NEFF_CACHE_DIR is a directory, so
the unsafe rename is not made where the value is a URL (it would write `s3://...` into a
directory variable): the use is marked instead.
"""

from __future__ import annotations

import pytest

from tests.project_files.helpers import findings, rewritten

OFF = [
    ("shell", "export XLA_USE_BF16=0\npython train.py\n", "python train.py\n"),
    ("shell", "unset XLA_DOWNCAST_BF16\npython train.py\n", "python train.py\n"),
    ("shell", "XLA_USE_BF16=false python train.py\n", "python train.py\n"),
    ("shell", "env XLA_USE_BF16=0 python train.py\n", "env python train.py\n"),
    ("dotenv", 'OMP_NUM_THREADS=1\nXLA_USE_BF16="0"\n', "OMP_NUM_THREADS=1\n"),
    ("dockerfile", "FROM ubuntu:26.04\nENV XLA_USE_BF16=0\n", "FROM ubuntu:26.04\n"),
    ("makefile", "export XLA_DOWNCAST_BF16 := 0\n", ""),
    ("yaml", "env:\n  OMP_NUM_THREADS: 1\n  XLA_USE_BF16: 0\n", "env:\n  OMP_NUM_THREADS: 1\n"),
    (
        "yaml",
        'env:\n  - name: A\n    value: "1"\n  - name: XLA_USE_BF16\n    value: "0"\n',
        'env:\n  - name: A\n    value: "1"\n',
    ),
    (
        "tox",
        "[testenv]\nsetenv =\n    A = 1\n    XLA_USE_BF16 = 0\n",
        "[testenv]\nsetenv =\n    A = 1\n",
    ),
]


@pytest.mark.parametrize(("kind", "text", "after"), OFF)
def test_nm702_with_the_switch_off_says_drop_it_and_drops_it(kind, text, after) -> None:
    [finding] = [f for f in findings(text, kind) if f.code == "NM702"]
    assert "drop the variable" in finding.message, finding.message
    assert "autocast" not in finding.message and "model.to" not in finding.message
    assert finding.fixable
    assert rewritten(text, kind) == after


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("shell", "export XLA_USE_BF16=1\n"),
        ("shell", "export XLA_USE_BF16=$BF16\n"),  # not known here: the bfloat16 advice stands
        ("dotenv", "XLA_USE_BF16=1\n"),
        ("yaml", "env:\n  XLA_DOWNCAST_BF16: '1'\n"),
    ],
)
def test_nm702_with_the_switch_on_keeps_its_advice(kind, text) -> None:
    [finding] = [f for f in findings(text, kind) if f.code == "NM702"]
    assert "bfloat16" in finding.message and not finding.fixable
    assert "TODO(neuron-migrate NM702)" in rewritten(text, kind)


URLS = [
    ("shell", "export NEURON_COMPILE_CACHE_URL=s3://bucket/neuron-cache\n"),
    ("dotenv", 'NEURON_COMPILE_CACHE_URL="s3://bucket/cache"\n'),
    ("dockerfile", "FROM ubuntu:26.04\nENV NEURON_COMPILE_CACHE_URL=s3://bucket/cache\n"),
    ("yaml", "env:\n  NEURON_COMPILE_CACHE_URL: s3://bucket/cache\n"),
    ("json", '{"env": {"NEURON_COMPILE_CACHE_URL": "s3://bucket/cache"}}\n'),
]


@pytest.mark.parametrize(("kind", "text"), URLS)
def test_nm706_does_not_write_a_url_into_a_directory_variable(kind, text) -> None:
    [finding] = [f for f in findings(text, kind) if f.code == "NM706"]
    assert "URL" in finding.message and not finding.fixable, finding.message
    after = rewritten(text, kind, unsafe=True)
    assert "TORCH_NEURONX_NEFF_CACHE_DIR=s3" not in after
    assert "TORCH_NEURONX_NEFF_CACHE_DIR: s3" not in after
    assert '"TORCH_NEURONX_NEFF_CACHE_DIR": "s3' not in after
    assert "NEURON_COMPILE_CACHE_URL" in after


def test_nm706_still_renames_a_directory_under_unsafe_fixes() -> None:
    text = "export NEURON_COMPILE_CACHE_URL=/var/cache/neuron\n"
    after = rewritten(text, "shell", unsafe=True)
    assert after == "export TORCH_NEURONX_NEFF_CACHE_DIR=/var/cache/neuron\n"
