"""A tree with one file of each bad kind: each is reported under `errors`, the rest scanned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate import api
from tests.cli import invoke

GOOD = "import torch_xla.core.xla_model as xm\nxm.mark_step()\n"


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "good.py").write_text(GOOD)
    (root / "py2.py").write_text('import torch_xla\nprint "hello"\n')
    (root / "latin1.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\n")
    (root / "blob.py").write_bytes(b"\x7fELF\x00\x01\x02torch" * 10)
    (root / "pickled.py").write_bytes(b"\x80\x04\x95\x00\x00\x00weights\x00" * 10)  # no "torch"
    (root / "empty.py").write_bytes(b"")
    (root / "dangling.py").symlink_to(root / "missing-target.py")
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "generated.py").write_text("import torch\n" + "x = torch.zeros(1)\n" * 300_000)
    (root / "sub").mkdir()
    (root / "sub" / "also_good.py").write_text(GOOD)
    (root / "sub" / "cycle").symlink_to(root / "sub")  # a folder loop: never followed
    return root


def test_each_bad_file_is_reported_and_the_rest_scanned(bad_tree: Path) -> None:
    report = api.scan(bad_tree, jobs=2, use_cache=False)
    kinds = {e.path: e.kind for e in report.errors}
    assert kinds == {
        "py2.py": "syntax",
        "latin1.py": "encoding",
        "blob.py": "binary",
        "pickled.py": "binary",
        "dangling.py": "unreadable",
        "loop.py": "loop",
        "generated.py": "too_large",
    }
    assert all("\n" not in e.reason and e.reason for e in report.errors)
    assert {s["path"] for s in report.skipped} == {"empty.py", "sub/cycle/"}  # listed, not followed
    assert {f.path for f in report.findings} == {"good.py", "sub/also_good.py"}


def test_permission_denied_is_reported() -> None:
    """Run as an unprivileged user: root reads files whatever their mode."""
    from tests.unprivileged import neuron_migrate, shared_folder

    with shared_folder() as folder:
        tree = folder / "tree"
        tree.mkdir(mode=0o755)
        secret = tree / "secret.py"
        secret.write_text(GOOD)
        secret.chmod(0)
        done = neuron_migrate("scan", "-f", "json", "--no-cache", str(tree), cwd=folder)
        errors = json.loads(done.stdout)["errors"]
        assert [(e["path"], e["kind"]) for e in errors] == [("secret.py", "unreadable")]


def test_cli_json_on_bad_tree_has_no_traceback(bad_tree: Path) -> None:
    result = invoke(["scan", str(bad_tree), "--format", "json", "--no-cache"])
    # The findings left are torch_xla uses, not unsupported ops: the default gate passes.
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert len(payload["errors"]) == 7
    assert "Traceback" not in result.stdout + result.stderr


def test_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from tests.scan.cli_helpers import run_cli

    code, out, err = run_cli(["scan", str(tmp_path / "nope")])
    assert code == 2
    assert out == ""
    assert err.strip().count("\n") == 0 and "no such file or directory" in err


def test_unknown_target_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from tests.scan.cli_helpers import run_cli

    (tmp_path / "a.py").write_text(GOOD)
    code, _, err = run_cli(["scan", str(tmp_path), "--target", "9.9.9"])
    assert code == 2
    assert err.strip().count("\n") == 0 and "9.9.9" in err


def test_an_unusable_cache_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from tests.scan.cli_helpers import run_cli

    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "plain-file").write_text("")
    code, out, err = run_cli(["scan", str(tmp_path), "--cache-dir", str(tmp_path / "plain-file/c")])
    assert code == 2 and out == ""
    assert (
        err.strip().count("\n") == 0 and "cannot open the cache in" in err and "--no-cache" in err
    )


def test_a_failed_cache_write_commits_nothing_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import sqlite3

    from neuron_migrate.errors import CacheError
    from neuron_migrate.incremental import cache

    (tmp_path / "a.py").write_text(GOOD)
    folder = tmp_path / "cache"

    def disk_full(where: Path, rows: list[bytes]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache, "_write_segment", disk_full)
    with pytest.raises(CacheError, match=r"cannot write the cache in .*: No space left on device"):
        api.scan(tmp_path, jobs=1, cache_dir=folder)
    (database,) = folder.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM results").fetchone() == (0,)
    assert not list(folder.glob("rows-*.bin"))
