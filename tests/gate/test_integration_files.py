"""The pre-commit hooks and the GitHub Action: their commands run, and the README shows the
commands the action really runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

UNSUPPORTED = "import torch\n\nprior = torch.distributions.Normal(0.0, 1.0)\n"
XLA = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"


def _env(tmp_path: Path) -> dict[str, str]:
    """A PATH where `neuron-migrate` is the one installed beside this Python."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "NEURON_MIGRATE_CACHE_DIR": str(tmp_path / "cache"),
    }


def _hooks() -> dict[str, dict]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in hooks}


def _run_hook(hook: dict, repo: Path, tmp_path: Path, args: list[str]) -> int:
    """What pre-commit does for a `language: python` hook with pass_filenames: false."""
    assert hook["pass_filenames"] is False
    command = shlex.split(hook["entry"]) + args
    return subprocess.run(
        command, cwd=repo, env=_env(tmp_path), capture_output=True, timeout=120
    ).returncode


def test_hook_definitions() -> None:
    hooks = _hooks()
    assert set(hooks) == {"neuron-migrate-scan", "neuron-migrate-rewrite-check"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"].startswith("neuron-migrate ")
        assert set(hook["types_or"]) == {"python", "jupyter"}


def test_scan_hook_gates(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    hook = _hooks()["neuron-migrate-scan"]
    (repo / "train.py").write_text(XLA)
    assert _run_hook(hook, repo, tmp_path, []) == 0
    assert _run_hook(hook, repo, tmp_path, ["--fail-on", "unsupported,xla"]) == 1
    (repo / "train.py").write_text(UNSUPPORTED)
    assert _run_hook(hook, repo, tmp_path, []) == 1


def test_rewrite_hook_entry_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("import torch\n\nx = torch.ones(3)\n")
    assert _run_hook(_hooks()["neuron-migrate-rewrite-check"], repo, tmp_path, []) == 0


def test_rewrite_hook_fails_on_pending_changes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(XLA)
    assert _run_hook(_hooks()["neuron-migrate-rewrite-check"], repo, tmp_path, []) == 1


def _action_script() -> str:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "scan")
    return step["run"]


def _commands(text: str) -> list[str]:
    return [
        line.strip() for line in text.splitlines() if line.strip().startswith("neuron-migrate ")
    ]


def test_readme_shows_the_commands_the_action_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### GitHub Action") :]
    section = section[: section.index("\n## ")]
    shown = [c for block in re.findall(r"```sh\n(.*?)```", section, re.S) for c in _commands(block)]
    assert shown == _commands(_action_script())
    assert "uses: your-org/neuron-migrate@" in section


def test_action_script_runs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "train.py").write_text(UNSUPPORTED + XLA)
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        **_env(tmp_path),
        "NM_PATH": "src",
        "NM_FAIL_ON": "unsupported",
        "NM_BASELINE": "",
        "NM_ARGS": "--no-config",
        "NM_SARIF": "out.sarif",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
    }
    proc = subprocess.run(
        ["bash", "-c", _action_script()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == "exit-code=1\n"  # the gate failed; the Gate step exits 1
    sarif = json.loads((work / "out.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    assert "::error file=src/train.py,line=3" in proc.stdout
    assert "Gate failed" in summary.read_text()
