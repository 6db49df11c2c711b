"""What the C++ floor backend (`privateuse1_floor.cpp`) gets from torch as it is, feature by
feature: the list of what a C++ port of the simulated device would have to add.

    python bench/privateuse1_features.py [--build-dir DIR]

Each line is one thing the simulated device does (runtime/README.md), tried on the floor's
device, with torch's own message where it fails. It times nothing; it needs what
`privateuse1_floor.py` needs (a C++ compiler and ninja) and shares its build folder.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import privateuse1_floor


def _autocast_casts() -> Any:
    import torch

    x = torch.randn(4, 4, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        return (x @ x).dtype, torch.softmax(x, -1).dtype


def _save_and_load() -> Any:
    import torch

    x = torch.randn(3, device="neuron")
    buffer = io.BytesIO()
    torch.save(x, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    return loaded.device, torch.equal(loaded.cpu(), x.cpu())


def _gloo_all_reduce() -> Any:
    import torch
    import torch.distributed as dist

    with socket.socket() as probe:  # a free port for the one-process group
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        tensor = torch.ones(3, device="neuron")
        dist.all_reduce(tensor)
        return tensor.cpu().tolist()
    finally:
        dist.destroy_process_group()


def _checks() -> list[tuple[str, Callable[[], Any]]]:
    import torch

    def x() -> Any:
        return torch.randn(4, 4, device="neuron")

    return [
        ("factories, .item()", lambda: x().sum().item()),
        ("printing a tensor", lambda: repr(x()[0, :2])),
        ("seeded torch.randn", _seeded_twice),
        (
            "float64 (to run as float32)",
            lambda: torch.zeros(2, dtype=torch.float64, device="neuron").dtype,
        ),
        (
            "channels_last (to be refused)",
            lambda: x().view(1, 1, 4, 4).to(memory_format=torch.channels_last).device,
        ),
        ("a CPU tensor mixed in (to fail)", lambda: (x() + torch.randn(4, 4)).device),
        ("a 0-dim CPU scalar mixed in", lambda: (x() * torch.tensor(2.0)).device),
        ("torch.autocast('neuron', bfloat16): mm, softmax", _autocast_casts),
        ("torch.save / torch.load", _save_and_load),
        (
            "DataLoader pin_memory (Tensor.pin_memory)",
            lambda: torch.randn(3).pin_memory().is_pinned(),
        ),
        ("scaled_dot_product_attention", lambda: _attention().shape),
        (
            "torch.compile(backend='aot_eager')",
            lambda: torch.compile(_relu_sum, backend="aot_eager")(x()).device,
        ),
        ("gloo all_reduce of a neuron tensor", _gloo_all_reduce),
    ]


def _seeded_twice() -> bool:
    import torch

    torch.manual_seed(0)
    first = torch.randn(2, device="neuron").cpu()
    torch.manual_seed(0)
    return torch.equal(first, torch.randn(2, device="neuron").cpu())


def _attention() -> Any:
    import torch

    q = torch.randn(1, 2, 8, 4, device="neuron")
    return torch.nn.functional.scaled_dot_product_attention(q, q, q)


def _relu_sum(x: Any) -> Any:
    return (x @ x).relu().sum()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--build-dir",
        type=Path,
        default=privateuse1_floor.DEFAULT_BUILD_DIR,
        help="where the floor extension is built (shared with privateuse1_floor.py)",
    )
    args = parser.parse_args()
    try:
        privateuse1_floor.install_device(args.build_dir)
    except Exception as exc:  # no compiler, no ninja: say so
        print(f"privateuse1_features: cannot build the extension: {exc}", file=sys.stderr)
        return 2
    for name, check in _checks():
        try:
            verdict = f"works: {check()}"
        except Exception as exc:  # torch's refusal is the finding
            first_line = (str(exc).splitlines() or [""])[0]
            verdict = f"fails: {type(exc).__name__}: {first_line[:160]}"
        print(f"{name:<50} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
