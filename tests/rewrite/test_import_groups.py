"""Imports the rewrite adds join the file's own groups: `os` among the standard library in
order, `torch.distributed` after the last torch import."""

from __future__ import annotations

from neuron_migrate.codemod.engine import rewrite_source

SOURCE = """import argparse
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from model import Net


def main():
    rank = xm.get_ordinal()
    local = xm.get_local_ordinal()
    return rank, local, sys.argv, argparse, torch, nn, Net
"""


def test_added_imports_join_their_groups() -> None:
    new = rewrite_source(SOURCE).new
    head = new.split("\n\n\ndef main")[0]
    assert head == (
        "import argparse\n"
        "import os\n"
        "import sys\n"
        "\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.distributed as dist\n"
        "\n"
        "from model import Net"
    )
