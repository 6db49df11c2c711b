"""`python -m run_original PROGRAM ARGS...`: run PROGRAM as `python PROGRAM ARGS...` does, then
leave without interpreter teardown.

A reference run's rank finishes its program and then, now and then, aborts in torch 2.13's gloo
teardown ("terminate called without an active exception"), after all its output is written and
even after destroy_process_group(): 4 of 10 torchrun runs of portable_trainer on two CPU ranks,
0 of 10 through this module. What the end-to-end
tests compare is the program's output and exit code, so the program ends here, once it has
returned or called sys.exit, with that exit code; an exception still ends it as Python does.
"""

import os
import runpy
import sys

import torch.distributed as dist


def main() -> None:
    # Whole lines, each one write: the ranks share one pipe, and a block-buffered rank's flush
    # can split a line of another's (`MASTER done` glued to rank 1's `Epoch 1 train end`).
    sys.stdout.reconfigure(line_buffering=True)
    program = sys.argv[1]
    sys.argv = sys.argv[1:]
    try:
        runpy.run_path(program, run_name="__main__")
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    leave(code)


def leave(code: int) -> None:
    """End this finished process with `code`, its group destroyed and its output flushed, past the
    interpreter teardown (the stand-in's spawn workers leave this way too)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
