"""The command line's own parsing: commands that carry another command, groups, streams."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.cli.app import COMMANDS, build_root
from tests.cli import invoke


def _captured(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> dict[str, Any]:
    """What the command line hands `module.name`, which is replaced by a recorder."""
    import importlib

    seen: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> Any:
        seen["args"], seen["kwargs"] = args, kwargs
        raise SystemExit(0)

    monkeypatch.setattr(importlib.import_module(module), name, record)
    return seen


def test_run_passes_the_command_with_its_own_options_through(monkeypatch, tmp_path) -> None:
    seen = _captured(monkeypatch, "neuron_migrate.verify.runner", "run")
    trace = str(tmp_path / "t.json")
    words = ["run", "-q", "--trace", trace, "python", "train.py", "--trace", "x", "-q"]
    assert invoke(words).exit_code == 0
    assert seen["args"] == (["python", "train.py", "--trace", "x", "-q"], None)


def test_run_drops_one_leading_double_dash_only(monkeypatch) -> None:
    seen = _captured(monkeypatch, "neuron_migrate.verify.runner", "run")
    invoke(["run", "-t", "2.13", "--", "torchrun", "--nproc-per-node", "2", "ddp.py", "--", "a"])
    assert seen["args"] == (["torchrun", "--nproc-per-node", "2", "ddp.py", "--", "a"], "2.13")


def test_verify_takes_options_after_path_and_the_command_after_dashes(monkeypatch) -> None:
    seen = _captured(monkeypatch, "neuron_migrate.verify.reconcile", "verify")
    words = ["verify", "src", "-f", "json", "--fail-on", "fallback", "--"]
    invoke([*words, "python", "-m", "m", "-f", "x"])
    assert seen["args"] == (Path("src"), ["python", "-m", "m", "-f", "x"])
    assert seen["kwargs"]["fail_on"] == ("fallback",)


def test_verify_without_a_command_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke(["verify", str(tmp_path)])
    assert result.exit_code == 2
    assert "give the command to run after `--`" in result.stderr


def test_repeatable_options_collect_every_value(monkeypatch) -> None:
    seen = _captured(monkeypatch, "neuron_migrate.cli.scan", "_scan")
    invoke(["scan", ".", "--select", "NM1,NM9", "--select", "NM2", "--exclude", "a/*"])
    options = seen["kwargs"]
    assert options["select"] == ("NM1", "NM9", "NM2") and options["exclude"] == ("a/*",)
    assert options["progress"] is None
    invoke(["scan", ".", "--no-progress"])
    assert seen["kwargs"]["progress"] is False


@pytest.mark.parametrize("words", [[], ["matrix"], ["rules"], ["report"], ["server"]])
def test_a_missing_command_prints_help_and_exits_2(words: list[str]) -> None:
    result = invoke(words)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Usage: {' '.join(['neuron-migrate', *words])} [OPTIONS]")
    assert "Commands" in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["scan", ".", "--no-such-option"], "No such option: --no-such-option"),
        (["scan", ".", "--jobs", "many"], "'-j' / '--jobs': 'many' is not a valid int"),
        (["scan"], "Missing argument 'PATH'"),
        (["matrix", "nope"], "No such command 'nope'"),
    ],
)
def test_usage_errors_are_one_red_line_and_exit_2(words: list[str], message: str) -> None:
    result = invoke(words)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"(see `neuron-migrate {words[0]}" in result.stderr


def test_help_lists_every_command_and_option_as_written() -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    for name in ("scan", "rewrite", "run", "verify", "demo", "matrix", "rules", "report", "server"):
        assert f" {name} " in result.stdout
    scan = invoke(["scan", "-h"]).stdout
    assert "Usage: neuron-migrate scan [OPTIONS] PATH" in scan
    assert invoke(["verify", "-h"]).stdout.startswith(
        "Usage: neuron-migrate verify PATH [OPTIONS] -- CMD ..."
    )
    # Help texts are not read as rich markup: the table name stays.
    assert "Read [tool.neuron-migrate] from" in " ".join(scan.split())


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


def _every_command() -> list[Any]:
    root = build_root()
    loaded = [root.get_command(None, name) for name in COMMANDS]
    return [
        sub for command in loaded for sub in getattr(command, "commands", {"": command}).values()
    ]


def test_every_command_has_a_docstring() -> None:
    commands = _every_command()
    assert len(commands) >= 14
    assert all(command.help for command in commands)


def test_the_root_lists_each_command_with_the_line_the_command_itself_gives() -> None:
    root = build_root()
    assert root.list_commands(None) == list(COMMANDS)
    for name in COMMANDS:
        command = root.get_command(None, name)
        assert command.name == name
        assert command.get_short_help_str(limit=200) == COMMANDS[name]


def test_top_level_help_loads_neither_typer_nor_a_command_module() -> None:
    code = (
        "import sys\n"
        "from neuron_migrate.cli import exit_code\n"
        "assert exit_code(['--help']) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('neuron_migrate.cli.')))\n"
        "print('typer' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *page, loaded, typer_loaded = done.stdout.strip().splitlines()
    assert loaded == "['neuron_migrate.cli.commands', 'neuron_migrate.cli.help_page']"
    assert typer_loaded == "False"
    assert any("scan" in line for line in page) and any("Commands" in line for line in page)


def test_the_root_page_drawn_without_typer_is_the_applications(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from neuron_migrate.cli import app, exit_code

    assert exit_code(["--help"]) == 0
    fast = capsys.readouterr().out
    assert app.run(["--help"]) == 0  # the typer application's own page
    assert capsys.readouterr().out == fast
    assert "--install-completion" in fast and "Show this message and exit." in fast


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


def test_piped_tables_are_never_cut() -> None:
    from neuron_migrate.ruleset import load_ruleset

    listed = invoke(["rules", "list"])  # stdout is not a terminal here
    assert listed.exit_code == 0 and "…" not in listed.stdout
    rows = listed.stdout.splitlines()
    for rule in load_ruleset().rules:  # each rule on one row, with its whole summary
        assert any(rule.code in row and rule.summary in row for row in rows), rule.code
    for words in (["matrix", "list"], ["matrix", "show", "torch.sort"], ["matrix", "stats"]):
        assert "…" not in invoke(words).stdout
