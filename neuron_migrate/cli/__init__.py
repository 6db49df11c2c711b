"""The `neuron-migrate` command line: parse options, call the API, render, exit code.

Exit codes: 0 clean / gate passed, 1 gate failed (or `rewrite --check` would change files),
2 usage, configuration or internal error.

The commands are a typer application (`neuron_migrate.cli.app`), one module per command group.
This module imports nothing else until it knows that the command runs here and not in a server
(`neuron_migrate.incremental.server`, imported only where a server folder exists:
`neuron_migrate.served`); `--version` imports nothing at all, and `--help` only the
table of commands and rich (`help_page`), not typer.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `typing` is a few milliseconds to import; mypy reads this name as True
if TYPE_CHECKING:
    from typing import NoReturn

# Commands that take PATH, options after it, and then `-- CMD ...`: the command is cut off
# before parsing and handed to the command as the context's `obj["command"]`. (`run` has no
# PATH and takes the rest of the line as it is.)
_COMMAND_AFTER_DASHES = ("verify",)


def _say(message: str) -> None:
    from neuron_migrate.cli.app import say_error

    say_error(message)


def main(argv: list[str] | None = None) -> None:
    """The console entry point. A command line of this process's own (`argv` None) goes to the
    server when one runs; a `scan` or `rewrite` run here then leaves without the interpreter's
    teardown (`leave`), as the server's children do."""
    words = sys.argv[1:] if argv is None else argv
    if argv is None:
        from neuron_migrate.served import SERVED_COMMANDS, may_be_served

        if may_be_served(words):  # else the speed machinery is not even imported
            from neuron_migrate.incremental.server.client import hand_over

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
    if words == ["--version"]:  # answered before typer loads
        from neuron_migrate import __version__

        print(__version__)
        sys.exit(0)
    if words in (["--help"], ["-h"]):  # the root page needs only the table of commands
        from neuron_migrate.cli.help_page import print_root_help

        print_root_help()
        print()  # the empty line click's help option prints after a page (its own is empty)
        sys.exit(0)
    from neuron_migrate.cli.app import run
    from neuron_migrate.errors import NeuronMigrateError

    obj: dict[str, list[str]] = {}
    if words[:1] and words[0] in _COMMAND_AFTER_DASHES and "--" in words:
        cut = words.index("--")
        words, obj["command"] = words[:cut], words[cut + 1 :]
    try:
        code = run(words, obj)
    except NeuronMigrateError as exc:
        _say(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()  # the reader left (`| head`): no traceback, and none at exit either
        sys.exit(1)
    except OSError as exc:
        if not _full(exc):
            raise
        _cannot_write(exc)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(1)
    except OSError as exc:  # what was printed did not fit on the disk
        _cannot_write(exc)
    sys.exit(code)


def _full(exc: OSError) -> bool:
    """A write that found no room: the disk, or this user's quota, is full."""
    import errno

    return exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def _cannot_write(exc: OSError) -> NoReturn:
    """One line and exit 2 for output that could not be written: never exit 1, which a CI
    reads as a failed gate."""
    _say(f"cannot write the output: {exc.strerror or exc}")
    _quiet_stdout()
    sys.exit(2)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush of it cannot fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
