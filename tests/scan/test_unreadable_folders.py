"""A folder the scan may not list is an error, named, not a folder silently passed over:
`--fail-on error` must not pass over code it never read. Run as an unprivileged user (root
lists every folder whatever its mode)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unprivileged import neuron_migrate, shared_folder

XLA = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n"


def _tree(folder: Path) -> Path:
    tree = folder / "tree"
    (tree / "secret").mkdir(parents=True)
    (tree / "ok.py").write_text("import torch\nx = torch.ones(2)\n")
    (tree / "secret" / "hidden.py").write_text(XLA)
    for path in (tree, tree / "ok.py", tree / "secret" / "hidden.py"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (tree / "secret").chmod(0o000)
    return tree


def test_an_unreadable_folder_is_an_error_that_fails_the_error_gate() -> None:
    with shared_folder() as folder:
        tree = _tree(folder)
        done = neuron_migrate(
            "scan", "-f", "json", "--no-cache", "--fail-on", "error", str(tree), cwd=folder
        )
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        (error,) = report["errors"]
        assert error["path"] == "secret/" and "cannot list the folder" in error["reason"]
        assert report["summary"]["gate"]["failing_errors"] == 1
        terminal = neuron_migrate("scan", "--no-cache", str(tree), cwd=folder)
        assert terminal.returncode == 0, terminal.stderr  # the default gate: no error status
        assert "secret/: cannot list the folder" in terminal.stdout


def test_the_json_re_scan_with_a_cache_reports_it_too() -> None:
    with shared_folder() as folder:
        tree = _tree(folder)
        args = ["scan", "-f", "json", "--fail-on", "error"]  # the cache: in the user's home
        for _ in range(2):
            done = neuron_migrate(*args, str(tree), cwd=folder)
            assert done.returncode == 1, done.stderr
            assert [e["path"] for e in json.loads(done.stdout)["errors"]] == ["secret/"]


def test_rewrite_names_an_unreadable_folder_and_rewrites_the_rest() -> None:
    with shared_folder() as folder:
        tree = _tree(folder)
        (tree / "train.py").write_text(XLA)
        (tree / "train.py").chmod(0o666)
        done = neuron_migrate("rewrite", "--no-cache", str(tree), cwd=folder)
        assert done.returncode == 0, done.stderr
        assert "secret/: cannot list the folder" in done.stderr
        assert "+device = torch.device(" in done.stdout
