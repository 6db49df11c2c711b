"""The `neuron-migrate` command line: parse options, call the API, render, exit code.

Exit codes: 0 clean / gate passed, 1 gate failed (or `rewrite --check` would change files),
2 usage, configuration or internal error.

The parser is the standard library's argparse: a re-scan that the cache answers takes a few
hundred milliseconds, and importing a CLI framework (typer and click) cost 45-60 ms of it.
This module imports nothing else until it knows that the command runs here and not in a server
(`neuron_migrate.incremental.server`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `typing` is a few milliseconds to import; mypy reads this name as True
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

    from neuron_migrate.cli.commands import Handler

# Each command group lives in its own module with a `register(commands)` function.
_COMMAND_MODULES = (
    "scan",
    "rewrite",
    "run",
    "matrix",
    "rules",
    "verify",
    "demo",
    "report",
    "server",
)

# Commands that take PATH, options after it, and then `-- CMD ...`. argparse cannot express
# that (a positional list after PATH is filled, empty, with PATH), so the command is cut off
# before parsing. `run` has no PATH and takes the rest of the line as it is.
_COMMAND_AFTER_DASHES = ("verify",)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` alone: building all of them (each an
    ArgumentParser, and their modules imported) takes a measurable part of a fast re-scan."""
    import argparse
    import importlib

    from neuron_migrate import __version__
    from neuron_migrate.cli.commands import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="neuron-migrate",
        description="Move PyTorch code from torch_xla to the native TorchNeuron `neuron` device.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in (command,) if command in _COMMAND_MODULES else _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"neuron_migrate.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"neuron_migrate.cli.{name}":
                raise
            continue
        module.register(commands)
    return parser


def _say(message: str) -> None:
    from rich.console import Console  # only when there is something to say

    Console(stderr=True).print(message, highlight=False, soft_wrap=True)


def parse(words: list[str]) -> argparse.Namespace:
    """The parsed command line; a usage error prints usage and exits 2."""
    command: list[str] = []
    if words[:1] and words[0] in _COMMAND_AFTER_DASHES and "--" in words:
        cut = words.index("--")
        words, command = words[:cut], words[cut + 1 :]
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    if command:
        args.command = command
    if getattr(args, "handler", None) is None:  # a command group without its command, or none
        (getattr(args, "group_parser", None) or parser).print_help(sys.stderr)
        sys.exit(2)
    return args


def main(argv: list[str] | None = None) -> None:
    """The console entry point. A command line of this process's own (`argv` None) goes to the
    server when one runs; a `scan` or `rewrite` run here then leaves without the interpreter's
    teardown (`leave`), as the server's children do."""
    words = sys.argv[1:] if argv is None else argv
    if argv is None:
        from neuron_migrate.incremental.server.client import SERVED_COMMANDS, hand_over

        code = hand_over(words)
        if code is not None:
            sys.exit(code)
        if words[:1] and words[0] in SERVED_COMMANDS:
            leave(exit_code(words))
    run_here(words)


def exit_code(words: list[str]) -> int:
    """The exit code of `neuron-migrate WORDS` run in this process."""
    try:
        run_here(words)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def leave(code: int) -> NoReturn:
    """Exit with `code` at once: the exit handlers run and the standard streams are flushed,
    but the objects are not freed one by one. A scan ends holding its whole report, and freeing
    it took 15 ms of a 170 ms re-scan of one changed file among 6,244."""
    import atexit
    import contextlib
    import os

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or debugger reports once the program has returned
    threading = sys.modules.get("threading")  # not imported: no thread was started with it
    if threading is not None and any(
        thread.is_alive() and not thread.daemon and thread is not threading.main_thread()
        for thread in threading.enumerate()
    ):
        sys.exit(code)  # a thread still at work: exit as usual, which waits for it
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's, which exit runs
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, or a stream closed
            stream.flush()
    os._exit(code & 0xFF)


def run_here(words: list[str]) -> None:
    """Run the command `words` in this process; exits with its code."""
    from neuron_migrate.errors import NeuronMigrateError

    args = parse(words)
    handler: Handler = args.handler
    try:
        code = handler(args)
    except NeuronMigrateError as exc:
        _say(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()  # the reader left (`| head`): no traceback, and none at exit either
        sys.exit(1)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(1)
    sys.exit(code)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush of it cannot fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
