"""The sample projects in fixtures/projects/ are valid Python and use torch_xla the way they claim.

torch_xla is never installed, so the projects cannot be imported or run as they are: these tests
read them statically (py_compile and ast).
"""

from __future__ import annotations

import ast
import py_compile
import sys
from pathlib import Path

import pytest

PROJECTS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "projects"

# project -> file -> the torch_xla imports it must contain, as (module, alias) pairs.
EXPECTED_IMPORTS: dict[str, dict[str, set[tuple[str, str | None]]]] = {
    "mlp_single": {
        "train.py": {("torch_xla.core.xla_model", "xm")},
    },
    "ddp_spawn": {
        "train.py": {
            ("torch_xla.core.xla_model", "xm"),
            ("torch_xla.distributed.parallel_loader", "pl"),
            ("torch_xla.distributed.xla_backend", None),
            ("torch_xla.distributed.xla_multiprocessing", "xmp"),
            ("torch_xla.runtime", "xr"),
        },
        "data.py": {("torch_xla.core.xla_model", "xm")},
    },
    "transformer_modern": {
        "train.py": {
            ("torch_xla", None),
            ("torch_xla.amp", None),
            ("torch_xla.core.xla_model", "xm"),
            ("torch_xla.runtime", "xr"),
        },
    },
    "mixed_status": {
        "train.py": {("torch_xla.core.xla_model", "xm")},
    },
}

# project -> dotted names that must be called somewhere in the project.
EXPECTED_CALLS: dict[str, set[str]] = {
    "mlp_single": {"xm.xla_device", "xm.mark_step", "xm.save", "xm.master_print"},
    "ddp_spawn": {
        "xmp.spawn",
        "dist.init_process_group",
        "pl.MpDeviceLoader",
        "xm.optimizer_step",
        "xm.rendezvous",
        "xm.master_print",
        "xm.xla_device",
        "xr.world_size",
        "xm.xrt_world_size",
        "xm.get_ordinal",
        "DDP",
        "DistributedSampler",
    },
    "transformer_modern": {
        "torch_xla.device",
        "torch_xla.sync",
        "torch_xla.launch",
        "xr.world_size",
        "xr.global_ordinal",
        "torch_xla.amp.autocast",
        "torch.autocast",
        "torch.compile",
        "nn.TransformerEncoder",
    },
    "mixed_status": {
        "xm.xla_device",
        "xm.mark_step",
        "torch.sort",
        "torch.linalg.qr",
        "torch.distributions.Normal",
        "torch.compile",
    },
}

PROJECTS = sorted(EXPECTED_IMPORTS)


def _py_files(project: str) -> list[Path]:
    return sorted((PROJECTS_DIR / project).rglob("*.py"))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=(3, 10))


def _torch_xla_imports(tree: ast.Module) -> set[tuple[str, str | None]]:
    found: set[tuple[str, str | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == "torch_xla":
                    found.add((alias.name, alias.asname))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.partition(".")[0] == "torch_xla"
        ):
            for alias in node.names:
                found.add((f"{node.module}.{alias.name}", alias.asname))
    return found


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _calls(project: str) -> set[str]:
    names = set()
    for path in _py_files(project):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Call) and (name := _dotted(node.func)):
                names.add(name)
    return names


def _string_constants(project: str) -> set[str]:
    return {
        node.value
        for path in _py_files(project)
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


_MAIN_GUARDS = {"__name__ == '__main__'", "'__main__' == __name__"}


def test_the_four_projects_exist() -> None:
    present = {
        p.name for p in PROJECTS_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
    }
    assert present == set(PROJECTS)


ALL_FILES = [
    pytest.param(path, id=str(path.relative_to(PROJECTS_DIR)))
    for project in PROJECTS
    for path in _py_files(project)
]


@pytest.mark.parametrize("path", ALL_FILES)
def test_file_compiles(path: Path, tmp_path: Path) -> None:
    # cfile in tmp_path: no __pycache__ is left in the fixtures (they ship in the wheel)
    py_compile.compile(str(path), cfile=str(tmp_path / "out.pyc"), doraise=True)
    _parse(path)  # and stays within Python 3.10 syntax


@pytest.mark.parametrize("project", PROJECTS)
def test_project_layout(project: str) -> None:
    folder = PROJECTS_DIR / project
    assert (folder / "README.md").is_file()
    assert (folder / "train.py").is_file()
    assert len(_py_files(project)) >= 3, "a project is several files"


@pytest.mark.parametrize("project", PROJECTS)
def test_train_has_steps_and_batch_size_options(project: str) -> None:
    tree = _parse(PROJECTS_DIR / project / "train.py")
    options = set()
    for path in _py_files(project):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Call) and _dotted(node.func) == "parser.add_argument":
                options.update(
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                )
    assert {"--steps", "--batch-size"} <= options
    guards = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) in _MAIN_GUARDS]
    assert guards, "train.py runs as a script"


@pytest.mark.parametrize("project", PROJECTS)
def test_torch_xla_imports(project: str) -> None:
    expected = EXPECTED_IMPORTS[project]
    for path in _py_files(project):
        found = _torch_xla_imports(_parse(path))
        want = expected.get(path.name, set())
        assert found == want, f"{project}/{path.name}: {sorted(map(str, found))}"


@pytest.mark.parametrize("project", PROJECTS)
def test_local_imports_resolve_inside_the_project(project: str) -> None:
    folder = PROJECTS_DIR / project
    third_party = {"torch", "torch_xla"}
    for path in _py_files(project):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                tops = [a.name.partition(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.partition(".")[0]]
            else:
                continue
            for top in tops:
                if top in third_party or top in sys.stdlib_module_names:
                    continue
                assert (folder / f"{top}.py").is_file(), f"{project}/{path.name} imports {top}"


@pytest.mark.parametrize("project", PROJECTS)
def test_expected_calls(project: str) -> None:
    missing = EXPECTED_CALLS[project] - _calls(project)
    assert not missing, f"{project} lacks {sorted(missing)}"


def test_xla_device_strings() -> None:
    assert "xla" in _string_constants("mlp_single")
    assert {"xla", "xla://"} <= _string_constants("ddp_spawn")
    assert {"xla", "openxla"} <= _string_constants("transformer_modern")
    assert "openxla" in _string_constants("mixed_status")


def test_mixed_status_reaches_float64() -> None:
    names = set()
    for path in _py_files("mixed_status"):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Attribute) and (name := _dotted(node)):
                names.add(name)
    assert "torch.float64" in names
    assert any(n.endswith(".double") for n in names)
