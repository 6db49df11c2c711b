"""A machine without torch_xla, as every TorchNeuron machine is: imports of it fail in-process."""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator


class _NoTorchXla(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch_xla" or name.startswith("torch_xla."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextlib.contextmanager
def without_torch_xla() -> Iterator[None]:
    finder = _NoTorchXla()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
