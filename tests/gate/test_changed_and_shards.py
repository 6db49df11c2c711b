"""`--changed-since REF` scans what git says changed; `--shard I/N` splits a tree and
`report merge` puts it back together with the gate applied to the whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from neuron_migrate.scan.shard import in_shard, parse_shard, shard_of
from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"
UNSUPPORTED = "import torch\n\nn = torch.distributions.Normal(0.0, 1.0)\n"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "HOME": str(repo),
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        },
    )


def _json(args: list[str]) -> tuple[int, dict]:
    code, out, err = invoke([*args, "-f", "json"])
    assert code in (0, 1), err
    return code, json.loads(out)


def test_changed_since_limits_the_scan(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "old.py").write_text(XLA)
    (tmp_path / "touched.py").write_text(XLA)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "touched.py").write_text(XLA + "xm.mark_step()\n")
    (tmp_path / "added.py").write_text(XLA)
    _, report = _json(
        ["scan", str(tmp_path), "--changed-since", "HEAD", "--no-cache", "--no-config", "-j", "1"]
    )
    assert {f["path"] for f in report["findings"]} == {"added.py", "touched.py"}
    assert report["changed_since"] == "HEAD"
    code, _, err = invoke(["scan", str(tmp_path), "--changed-since", "no-such-ref", "--no-config"])
    assert code == 2 and "unknown git ref 'no-such-ref'" in err


def test_shards_are_deterministic_and_partition_the_tree() -> None:
    paths = [f"pkg/m{i}.py" for i in range(200)]
    owners = [shard_of(p, 4) for p in paths]
    assert owners == [shard_of(p, 4) for p in paths]
    assert set(owners) == {1, 2, 3, 4}
    for p in paths:
        assert sum(in_shard(p, (i, 4)) for i in range(1, 5)) == 1
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(Exception, match="--shard"):
            parse_shard(bad)


def test_merged_shards_equal_the_whole_and_gate_the_whole(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(12):
        (tree / f"m{i}.py").write_text(XLA if i % 3 else UNSUPPORTED)
    common = ["--no-cache", "--no-config", "-j", "1", "--fail-on", "unsupported"]
    _, whole = _json(["scan", str(tree), *common])
    parts = []
    for i in (1, 2, 3):
        out = tmp_path / f"shard{i}.json"
        invoke(["scan", str(tree), "--shard", f"{i}/3", "-f", "json", "-o", str(out), *common])
        parts.append(str(out))
    shard_paths = [{f["path"] for f in json.loads(Path(p).read_text())["findings"]} for p in parts]
    assert sum(len(s) for s in shard_paths) == len({f["path"] for f in whole["findings"]})

    code, merged = _json(["report", "merge", *parts])
    assert code == 1  # the unsupported findings of every shard fail the merged gate
    strip = ("elapsed_s",)
    assert merged["findings"] == whole["findings"]
    assert {k: v for k, v in merged["summary"].items() if k not in strip} == {
        k: v for k, v in whole["summary"].items() if k not in strip
    }
    code, _, _ = invoke(["report", "merge", *parts, "--fail-on", "none", "-f", "sarif"])
    assert code == 0
    code, _, err = invoke(["report", "merge", *parts[:2]])
    assert code == 2 and "shard 3/3 is missing" in err
    code, _, err = invoke(["report", "merge", parts[0], parts[0], parts[1], parts[2]])
    assert code == 2 and "given twice" in err
