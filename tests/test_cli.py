"""The command line's own parsing: commands that carry another command, groups, streams."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.cli import build_parser, parse
from neuron_migrate.cli.commands import cleandoc
from neuron_migrate.cli.run import command_after_dashes
from tests.cli import invoke


def test_run_passes_the_command_with_its_own_options_through() -> None:
    args = parse(["run", "-q", "--trace", "t.json", "python", "train.py", "--trace", "x", "-q"])
    assert args.quiet and args.trace == Path("t.json")
    assert command_after_dashes(args.command) == ["python", "train.py", "--trace", "x", "-q"]


def test_run_drops_one_leading_double_dash_only() -> None:
    args = parse(["run", "--", "torchrun", "--nproc-per-node", "2", "ddp.py", "--", "a"])
    assert command_after_dashes(args.command) == [
        "torchrun",
        "--nproc-per-node",
        "2",
        "ddp.py",
        "--",
        "a",
    ]


def test_verify_takes_options_after_path_and_the_command_after_dashes() -> None:
    args = parse(
        [
            "verify",
            "src",
            "-f",
            "json",
            "--fail-on",
            "fallback",
            "--",
            "python",
            "-m",
            "m",
            "-f",
            "x",
        ]
    )
    assert args.path == Path("src") and args.output_format == "json"
    assert args.fail_on == ["fallback"]
    assert args.command == ["python", "-m", "m", "-f", "x"]


def test_verify_without_a_command_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["verify", str(tmp_path)])
    assert result.exit_code == 2
    assert "give the command to run after `--`" in result.stderr


def test_repeatable_options_collect_every_value() -> None:
    args = parse(["scan", ".", "--select", "NM1,NM9", "--select", "NM2", "--exclude", "a/*"])
    assert args.select == ["NM1,NM9", "NM2"] and args.exclude == ["a/*"]
    assert args.progress is None
    assert parse(["scan", ".", "--no-progress"]).progress is False


@pytest.mark.parametrize("words", [[], ["matrix"], ["rules"], ["report"]])
def test_a_missing_command_prints_help_and_exits_2(words: list[str]) -> None:
    result = invoke(words)
    assert result.exit_code == 2
    assert result.stderr.startswith("usage: neuron-migrate") and result.stdout == ""


def test_unknown_option_and_bad_number_exit_2() -> None:
    assert invoke(["scan", ".", "--no-such-option"]).exit_code == 2
    bad = invoke(["scan", ".", "--jobs", "many"])
    assert bad.exit_code == 2 and "invalid int value: 'many'" in bad.stderr


def test_version() -> None:
    from neuron_migrate import __version__

    result = invoke(["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == __version__


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path) -> None:
    body = "import torch\n\n" + "torch.sort(torch.ones(3, device='neuron'))\n" * 400
    for n in range(40):  # a report of several MB: far more than a pipe holds
        (tmp_path / f"m{n}.py").write_text(body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "neuron_migrate", "scan", str(tmp_path), "-f", "json", "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # as `| head -c 1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


def _handlers(parser: argparse.ArgumentParser) -> list[object]:
    """Every command's handler, groups' commands included."""
    found: list[object] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                handler = sub.get_default("handler")
                found += [handler] if handler is not None else _handlers(sub)
    return found


@pytest.mark.parametrize(
    "doc",
    [
        *(h.__doc__ for h in _handlers(build_parser()) if h.__doc__),
        "",
        "one line",
        "  first\n\n      indented\n    less\n\t tab\n   \n",
        "\n\n    starts low\n      deeper\n\n",
    ],
)
def test_command_help_cleans_docstrings_as_inspect_does(doc: str) -> None:
    # `cleandoc` stands in for `inspect.cleandoc`, whose import every run would pay for.
    assert cleandoc(doc) == inspect.cleandoc(doc)


def test_every_command_has_a_handler_with_a_docstring() -> None:
    handlers = _handlers(build_parser())
    assert len(handlers) >= 8
    assert all(h.__doc__ for h in handlers)


def test_a_scan_by_itself_leaves_at_once_with_its_code_output_and_exit_handlers(
    tmp_path: Path,
) -> None:
    # `scan` and `rewrite` skip the interpreter's teardown (`cli.leave`): what they print, their
    # exit code and the exit handlers (here one a sitecustomize registers) must all survive it.
    marker, freed = tmp_path / "exit-handler-ran", tmp_path / "objects-freed"
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).touch)\n"
        "class Freed:\n"
        f"    def __del__(self, path=pathlib.Path({str(freed)!r})):\n"
        "        path.touch()\n"
        "kept = Freed()  # freed only by the interpreter's teardown\n"
    )
    project = Path(__file__).parents[1] / "fixtures" / "projects" / "mixed_status"
    scan = ["scan", "--format", "json", "--no-cache", "--fail-on", "unsupported", str(project)]
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *scan],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "NEURON_MIGRATE_NO_SERVER": "1"},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the gate fails on this project
    assert json.loads(done.stdout)["summary"]["gate"]["passed"] is False
    assert marker.exists()
    assert not freed.exists()


def test_a_profiled_scan_exits_as_usual_so_the_profile_is_written(tmp_path: Path) -> None:
    profile = tmp_path / "scan.prof"
    project = Path(__file__).parents[1] / "fixtures" / "projects" / "mlp_single"
    scan = ["scan", "--no-cache", "--format", "json", str(project)]
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "neuron_migrate", *scan],
        capture_output=True,
        text=True,
        env={**os.environ, "NEURON_MIGRATE_NO_SERVER": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0
