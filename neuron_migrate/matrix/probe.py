"""Record what the installed torch-neuronx really does, for `neuron-migrate matrix import`.

Run it on a Trn2/Trn3 instance with your own training or inference command:

    neuron-migrate matrix probe -o probe.json -- python train.py --steps 2
    python probe.py -o probe.json -- python train.py      # the same, without neuron-migrate

(`neuron-migrate matrix probe --script > probe.py` writes this file: it needs only Python and
torch.) It records, in one JSON file:

- the versions: torch, torch-neuronx, neuronx-cc, Python, the platform;
- what torch-neuronx registers for PrivateUse1: the dispatcher's registrations for the key
  (`torch._C._dispatch_get_registrations_for_dispatch_key`), and torch-neuronx's own list
  (`torch_neuronx.utils.get_neuron_registered_ops()`) where it has one;
- after `torch_neuronx.clear_op_tracking()` and the command (a Python script or `-m module`,
  run in this process so the tracking sees it): `torch_neuronx.get_fallback_ops()` and
  `get_executed_ops()`.

It runs on neuron-migrate's simulated device too (`neuron-migrate run -- neuron-migrate matrix
probe ...`), whose stand-in `torch_neuronx` answers the same calls. The command's own exit code
is the probe's; a command that raises still gets its file written (the ops seen so far are
evidence), and the error is in it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import sys
import traceback
from typing import Any

FORMAT = "neuron-migrate-matrix-probe"
FORMAT_VERSION = 1


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.script:
        with open(__file__, encoding="utf-8") as f:
            sys.stdout.write(f.read())
        return 0
    try:
        record, code = probe(args.command)
    except ProbeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    fallbacks, registered = len(record["fallback_ops"]), len(record["registered"]["ops"])
    print(
        f"wrote {args.out}: torch-neuronx {record['versions']['torch_neuronx']}, "
        f"{registered} registered ops, {fallbacks} fell back during the command",
        file=sys.stderr,
    )
    return code


class ProbeError(Exception):
    """Nothing to probe: no neuron device, or a command the probe cannot run in-process."""


def _parse(argv: list[str]) -> argparse.Namespace:
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="neuron-migrate matrix probe",
        description="Record the ops torch-neuronx registers and the fallbacks of your command.",
    )
    parser.add_argument("-o", "--out", default="neuron-probe.json", help="JSON file to write.")
    parser.add_argument("--script", action="store_true", help="Print this probe as one file.")
    args = parser.parse_args(argv)
    args.command = command
    return args


def probe(command: list[str]) -> tuple[dict[str, Any], int]:
    """The probe record and the command's exit code."""
    import torch

    neuronx = _torch_neuronx()
    backend = torch._C._get_privateuse1_backend_name()
    if neuronx is None or backend != "neuron":
        raise ProbeError(
            "no neuron device here: torch-neuronx is not installed or did not register the "
            f"PrivateUse1 backend (it is {backend!r}); run on a Trn2/Trn3 instance with "
            "torch-neuronx, or under `neuron-migrate run`"
        )
    dispatcher = sorted(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    own = _call(neuronx, "utils.get_neuron_registered_ops")
    registered = (
        {"source": "torch_neuronx.utils.get_neuron_registered_ops()", "ops": sorted(map(str, own))}
        if own is not None
        else {
            "source": "torch._C._dispatch_get_registrations_for_dispatch_key('PrivateUse1')",
            "ops": dispatcher,
        }
    )
    tracking = all(
        callable(getattr(neuronx, name, None)) for name in ("clear_op_tracking", "get_fallback_ops")
    )
    if command and not tracking:
        raise ProbeError("this torch-neuronx has no clear_op_tracking/get_fallback_ops")
    record: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "versions": _versions(torch, neuronx),
        "simulated": bool(getattr(neuronx, "SIMULATED", False)),
        "platform": {"system": platform.platform(), "machine": platform.machine()},
        "registered": registered,
        "dispatcher_registrations": dispatcher,
        "command": list(command),
        "exit_code": 0,
        "fallback_ops": [],
        "executed_ops": [],
    }
    if not command:
        return record, 0
    neuronx.clear_op_tracking()
    code, error = _run(command)
    record["exit_code"] = code
    if error:
        record["error"] = error
    record["fallback_ops"] = sorted(map(str, neuronx.get_fallback_ops()))
    executed = _call(neuronx, "get_executed_ops")
    record["executed_ops"] = sorted(map(str, executed)) if executed is not None else []
    return record, code


def _torch_neuronx() -> Any:
    try:
        import torch_neuronx
    except ImportError:
        return None
    return torch_neuronx


def _call(module: Any, dotted: str) -> Any:
    target = module
    for part in dotted.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target() if callable(target) else None


def _versions(torch: Any, neuronx: Any) -> dict[str, str]:
    from importlib import metadata

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return ""

    return {
        "torch": torch.__version__.split("+")[0],
        "torch_neuronx": str(getattr(neuronx, "__version__", "") or installed("torch-neuronx")),
        "neuronx_cc": installed("neuronx-cc"),
        "python": platform.python_version(),
    }


def _run(command: list[str]) -> tuple[int, str]:
    """Run `python SCRIPT ...` or `python -m MODULE ...` here; (exit code, error or "")."""
    words = list(command)
    if os.path.basename(words[0]).startswith("python"):
        words = words[1:]
    if not words:
        raise ProbeError("give the command as: python SCRIPT ... or python -m MODULE ...")
    module = words[1] if words[0] == "-m" and len(words) > 1 else None
    if module is None and not words[0].endswith(".py"):
        raise ProbeError(
            f"cannot probe {command[0]!r} in this process: give python SCRIPT.py ... "
            "or python -m MODULE ..."
        )
    saved = sys.argv[:]
    sys.argv = words[1:] if module else words
    if module:
        sys.argv[0] = module
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(words[0])))
            runpy.run_path(words[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code, ""
    except Exception as exc:  # the command's own failure: keep what was seen up to it
        traceback.print_exc()
        return 1, f"{type(exc).__name__}: {exc}"
    finally:
        sys.argv = saved
    return 0, ""


if __name__ == "__main__":
    raise SystemExit(main())
