"""`neuron-migrate lsp` driven over pipes by an LSP client (`tests.lsp.client`).

Each expectation comes from the CLI or the API run on the same text written to disk: the
diagnostics are `scan`'s findings, the fix-all is `rewrite --out-dir`'s file, byte for byte.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from neuron_migrate.api import scan
from tests.lsp.client import LspClient

# On disk the file says something else: the server must judge the buffer, not the file.
ON_DISK = "import torch\n"

BUFFER = """\
import torch
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer):
    device = xm.xla_device()
    model = model.to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
        spectrum = torch.fft.rfft(x.double())
        values, order = torch.sort(spectrum.abs().reshape(-1))
    xm.master_print("done")
"""

# Characters outside the BMP before a finding: LSP columns count UTF-16 units by default.
WIDE = 'import torch\n\n\ndef f(x):\n    note = "🚀🚀"; y = torch.sort(x)\n    return y, note\n'

REQUIREMENTS = "torch-xla==2.1.0\nnumpy\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")


def scan_findings(tmp: Path, files: dict[str, str], name: str) -> list[Any]:
    """`scan`'s findings of `name` for a tree holding `files` as they are."""
    root = tmp / "scanned"
    _write(root, files)
    report = scan(root, use_cache=False, jobs=1)
    return [f for f in report.findings if f.path == name]


def rewritten(tmp: Path, files: dict[str, str], name: str) -> bytes:
    """What `neuron-migrate rewrite ROOT --out-dir OUT` writes for `name`."""
    root, out = tmp / "rewritten", tmp / "out"
    _write(root, files)
    subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", str(root), "--out-dir", str(out)],
        check=True,
        capture_output=True,
        env={"NEURON_MIGRATE_NO_SERVER": "1", "PATH": ""},
    )
    return (out / name).read_bytes()


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def expected_diagnostics(findings: list[Any], text: str) -> list[tuple[Any, ...]]:
    lines = text.split("\n")

    def at(line: int, col: int) -> dict[str, int]:
        return {"line": line - 1, "character": utf16(lines[line - 1][:col])}

    severity = {"error": 1, "warning": 2, "info": 3}
    return sorted(
        (
            f.code,
            f.message,
            severity[f.severity],
            repr({"start": at(f.line, f.col), "end": at(f.end_line, f.end_col)}),
        )
        for f in findings
    )


def got_diagnostics(published: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((d["code"], d["message"], d["severity"], repr(d["range"])) for d in published)


def apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """The text with LSP edits (of one version, not overlapping) applied: lines end at \\n."""
    lines = text.split("\n")

    def offset(position: dict[str, int]) -> int:
        before = sum(len(line) + 1 for line in lines[: position["line"]])
        if position["line"] >= len(lines):
            return len(text)
        line = lines[position["line"]]
        units = 0
        for at, char in enumerate(line):
            if units >= position["character"]:
                return before + at
            units += utf16(char)
        return before + len(line)

    spans = sorted(
        ((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    _write(root, {"train.py": ON_DISK})
    return root


@pytest.fixture
def client(workspace: Path) -> Iterator[LspClient]:
    lsp = LspClient(cwd=workspace)
    lsp.initialize(workspace)
    yield lsp
    lsp.kill()


def opened(client: LspClient, path: Path, text: str, version: int = 1) -> list[dict[str, Any]]:
    client.open(path, text, version=version)
    return client.notification("textDocument/publishDiagnostics", uri=path.as_uri())["diagnostics"]


def code_actions(client: LspClient, path: Path, first: int, last: int, **context: Any) -> Any:
    return client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": path.as_uri()},
            "range": {
                "start": {"line": first, "character": 0},
                "end": {"line": last, "character": 0},
            },
            "context": {"diagnostics": [], **context},
        },
    )


def test_diagnostics_are_the_scan_of_the_unsaved_buffer(
    client: LspClient, workspace: Path, tmp_path: Path
) -> None:
    published = opened(client, workspace / "train.py", BUFFER)
    expected = scan_findings(tmp_path, {"train.py": BUFFER}, "train.py")
    assert {f.status for f in expected} >= {"xla", "cpu_fallback", "float64", "native"}
    assert got_diagnostics(published) == expected_diagnostics(expected, BUFFER)
    for diagnostic in published:
        assert diagnostic["source"] == "neuron-migrate"
        href = diagnostic["codeDescription"]["href"]
        assert href.startswith("file://") and diagnostic["code"] in href
        assert Path(href.removeprefix("file://")).is_file()


def test_columns_count_utf16_units(client: LspClient, workspace: Path, tmp_path: Path) -> None:
    published = opened(client, workspace / "wide.py", WIDE)
    expected = scan_findings(tmp_path, {"wide.py": WIDE}, "wide.py")
    sort = [f for f in expected if f.api == "torch.sort"]
    assert sort and sort[0].col != utf16(WIDE.split("\n")[4][: sort[0].col])
    assert got_diagnostics(published) == expected_diagnostics(expected, WIDE)


def test_a_change_is_analysed_after_the_pause(client: LspClient, workspace: Path) -> None:
    path = workspace / "train.py"
    opened(client, path, "import torch\n")
    for version in range(2, 6):  # a burst of keystrokes: only the last text is published
        client.change(path, BUFFER[: 40 * version] if version < 5 else BUFFER, version)
    published = client.notification("textDocument/publishDiagnostics", uri=path.as_uri())
    assert published["version"] == 5
    assert "NM104" in {d["code"] for d in published["diagnostics"]}


def test_suppression_comments_and_the_workspace_config_are_honoured(
    workspace: Path, tmp_path: Path
) -> None:
    config = '[tool.neuron-migrate]\nignore = ["NM901"]\n'
    _write(workspace, {"pyproject.toml": config})
    text = BUFFER.replace("xm.mark_step()", "xm.mark_step()  # neuron-migrate: ignore[NM104]")
    lsp = LspClient(cwd=workspace)
    try:
        lsp.initialize(workspace)
        published = opened(lsp, workspace / "train.py", text)
    finally:
        lsp.kill()
    codes = {d["code"] for d in published}
    assert "NM104" not in codes and "NM901" not in codes and "NM101" in codes
    expected = scan_findings(tmp_path, {"train.py": text, "pyproject.toml": config}, "train.py")
    assert got_diagnostics(published) == expected_diagnostics(expected, text)


def test_a_client_that_pulls_gets_no_pushes(workspace: Path, tmp_path: Path) -> None:
    lsp = LspClient(cwd=workspace)
    try:
        lsp.initialize(workspace, {"textDocument": {"diagnostic": {}}})
        path = workspace / "train.py"
        lsp.open(path, BUFFER)
        pulled = lsp.request("textDocument/diagnostic", {"textDocument": {"uri": path.as_uri()}})
        # The server handles messages in order: a push for the open would have come first.
        assert not [m for m in lsp.held if m.get("method") == "textDocument/publishDiagnostics"]
    finally:
        lsp.kill()
    assert pulled["kind"] == "full"
    expected = scan_findings(tmp_path, {"train.py": BUFFER}, "train.py")
    assert got_diagnostics(pulled["items"]) == expected_diagnostics(expected, BUFFER)


def test_a_buffer_that_does_not_parse_shows_one_note(
    client: LspClient, workspace: Path, tmp_path: Path
) -> None:
    broken = BUFFER.replace("def train(model, loader, optimizer):", "def train(model, loader")
    published = opened(client, workspace / "train.py", broken)
    root = tmp_path / "scanned"
    _write(root, {"train.py": broken})
    errors = scan(root, use_cache=False, jobs=1).errors
    assert [(d["code"], d["message"]) for d in published] == [
        (errors[0].kind, f"not analysed: {errors[0].reason}")
    ]


def test_a_broken_config_is_shown_and_the_defaults_apply(workspace: Path) -> None:
    _write(workspace, {"pyproject.toml": '[tool.neuron-migrate]\nselect = "NM1"\nfail-on = 3\n'})
    lsp = LspClient(cwd=workspace)
    try:
        lsp.initialize(workspace)
        published = opened(lsp, workspace / "train.py", BUFFER)
        shown = lsp.notification("window/showMessage")
    finally:
        lsp.kill()
    assert "pyproject.toml" in shown["message"] and "fail-on" in shown["message"]
    assert "NM901" in {d["code"] for d in published}  # select is not applied either


def test_project_files_the_scan_reads(client: LspClient, workspace: Path, tmp_path: Path) -> None:
    path = workspace / "requirements.txt"
    published = opened(client, path, REQUIREMENTS)
    expected = scan_findings(tmp_path, {"requirements.txt": REQUIREMENTS}, "requirements.txt")
    assert expected
    assert got_diagnostics(published) == expected_diagnostics(expected, REQUIREMENTS)


def test_fix_all_is_the_rewrite_byte_for_byte(
    client: LspClient, workspace: Path, tmp_path: Path
) -> None:
    path = workspace / "train.py"
    opened(client, path, BUFFER)
    actions = code_actions(client, path, 0, 0, only=["source.fixAll"])
    assert [a["kind"] for a in actions] == ["source.fixAll.neuron-migrate"]
    change = actions[0]["edit"]["documentChanges"][0]
    assert change["textDocument"] == {"uri": path.as_uri(), "version": 1}
    fixed = apply_edits(BUFFER, change["edits"])
    assert fixed.encode("utf-8") == rewritten(tmp_path, {"train.py": BUFFER}, "train.py")


def test_fix_all_of_a_project_file(client: LspClient, workspace: Path, tmp_path: Path) -> None:
    path = workspace / "requirements.txt"
    opened(client, path, REQUIREMENTS)
    actions = code_actions(client, path, 0, 0, only=["source.fixAll.neuron-migrate"])
    fixed = apply_edits(REQUIREMENTS, actions[0]["edit"]["documentChanges"][0]["edits"])
    expected = rewritten(tmp_path, {"requirements.txt": REQUIREMENTS}, "requirements.txt")
    assert expected != REQUIREMENTS.encode() and fixed.encode() == expected


def quickfixes(client: LspClient, path: Path, diagnostic: dict[str, Any]) -> list[Any]:
    line = diagnostic["range"]["start"]["line"]
    actions = code_actions(client, path, line, line, only=["quickfix"]) or []
    return [a for a in actions if a["diagnostics"][0]["range"] == diagnostic["range"]]


def test_each_quickfix_is_the_rewrite_of_its_site(
    client: LspClient, workspace: Path, tmp_path: Path
) -> None:
    """A fix changes its own site's line and no other site's; taken one after another, the
    fixes make exactly the file `rewrite` makes."""
    path = workspace / "train.py"
    published = opened(client, path, BUFFER)
    fixable = {
        (f.code, f.line)
        for f in scan_findings(tmp_path, {"train.py": BUFFER}, "train.py")
        if f.fixable
    }
    offered = {
        (d["code"], d["range"]["start"]["line"] + 1)
        for d in published
        if quickfixes(client, path, d)
    }
    assert offered == fixable - {("NM100", 2)}  # the import goes with its last use
    buffer_lines = BUFFER.splitlines(True)
    for diagnostic in published:
        for fix in quickfixes(client, path, diagnostic):
            fixed = apply_edits(BUFFER, fix["edit"]["documentChanges"][0]["edits"])
            compile(fixed, "train.py", "exec")
            line = diagnostic["range"]["start"]["line"]
            kept = [text for at, text in enumerate(buffer_lines) if at != line]
            assert buffer_lines[line] not in fixed.splitlines(True)
            rest = iter(fixed.splitlines(True))
            assert all(text in rest for text in kept)  # in order: every other line stays

    text, version = BUFFER, 1
    while True:
        pulled = {"textDocument": {"uri": path.as_uri()}}
        found = client.request("textDocument/diagnostic", pulled)["items"]
        fixes = [fix for d in found for fix in quickfixes(client, path, d)]
        if not fixes:
            break
        change = fixes[0]["edit"]["documentChanges"][0]
        assert change["textDocument"]["version"] == version
        text, version = apply_edits(text, change["edits"]), version + 1
        client.change(path, text, version)
    assert text.encode("utf-8") == rewritten(tmp_path, {"train.py": BUFFER}, "train.py")


RESOLVING = {
    "textDocument": {
        "codeAction": {"dataSupport": True, "resolveSupport": {"properties": ["edit"]}}
    }
}


def test_a_client_that_resolves_gets_the_edits_when_it_asks(
    client: LspClient, workspace: Path
) -> None:
    """Actions cost nothing until one is chosen; resolved, each has the edit an eager server
    gives; once the buffer has changed, none."""
    path = workspace / "train.py"
    opened(client, path, BUFFER)
    eager = code_actions(client, path, 0, 20)
    assert len(eager) == 5 and all(a["edit"] for a in eager)
    lazy_client = LspClient(cwd=workspace)
    try:
        lazy_client.initialize(workspace, RESOLVING)
        opened(lazy_client, path, BUFFER)
        lazy = code_actions(lazy_client, path, 0, 20)
        assert [a["title"] for a in lazy] == [a["title"] for a in eager]
        assert not any("edit" in a for a in lazy)
        resolved = [lazy_client.request("codeAction/resolve", a) for a in lazy]
        assert [a["edit"] for a in resolved] == [a["edit"] for a in eager]
        lazy_client.change(path, BUFFER + "\n", 2)
        stale = lazy_client.request("codeAction/resolve", lazy[0])
        assert "edit" not in stale
    finally:
        lazy_client.kill()


def test_hover_shows_the_matrix_entry(client: LspClient, workspace: Path) -> None:
    path = workspace / "train.py"
    published = opened(client, path, BUFFER)
    sort = next(d for d in published if d["message"].startswith("torch.sort:"))
    hover = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": path.as_uri()}, "position": sort["range"]["start"]},
    )
    shown = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "matrix", "show", "torch.sort", "-t", "2.14"],
        check=True,
        capture_output=True,
        text=True,
        env={"NEURON_MIGRATE_NO_SERVER": "1", "PATH": "", "COLUMNS": "100"},
    ).stdout
    value = hover["contents"]["value"]
    assert "cpu_fallback" in value
    assert " ".join(shown.split()) in " ".join(value.split())
    assert hover["range"] == sort["range"]
    chained = next(d for d in published if d["message"].startswith("Tensor.reshape:"))
    both = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": path.as_uri()}, "position": chained["range"]["start"]},
    )["contents"]["value"]
    assert "`Tensor.abs`" in both and "`Tensor.reshape`" in both  # one span holds the other


def test_unknown_documents_and_bad_messages_do_not_end_the_server(
    client: LspClient, workspace: Path
) -> None:
    ghost = workspace / "ghost.py"
    client.change(ghost, BUFFER, 2)  # never opened
    assert code_actions(client, ghost, 0, 10) is None
    assert (
        client.request(
            "textDocument/hover",
            {"textDocument": {"uri": ghost.as_uri()}, "position": {"line": 0, "character": 0}},
        )
        is None
    )
    client.send_raw(b"{this is not json")
    client.send_raw(b'{"jsonrpc": "2.0", "id": 999, "method": "textDocument/hover"}')
    with pytest.raises(RuntimeError):
        client.request("no/such/method", {})
    published = opened(client, workspace / "train.py", BUFFER)
    assert published
    assert client.stop() == 0


def test_shutdown_then_exit_ends_with_code_0(client: LspClient) -> None:
    assert client.stop() == 0


def test_exit_without_shutdown_ends_with_code_1(client: LspClient) -> None:
    client.notify("exit", None)
    assert client.process.wait(30) == 1


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "pygls.py").write_text("raise ImportError('hidden', name='pygls')\n")
    result = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "lsp"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(hidden), "NEURON_MIGRATE_NO_SERVER": "1", "PATH": ""},
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "pip install 'neuron-migrate[lsp]'" in result.stderr


def test_no_pygls_import_for_other_commands() -> None:
    code = (
        "import sys; from neuron_migrate.cli import exit_code; "
        "exit_code(['lsp', '--help']); print('pygls' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("False")
