"""Real-shaped torch_xla programs, migrated with `rewrite --apply` and run with no hand edit.

One program per idiom family (fixtures/e2e/<name>/train.py, written for this project). Each is
rewritten in a temporary copy, then run under `neuron-migrate run -- python train.py` and
`neuron-migrate run -- torchrun --nproc-per-node 2 train.py`. Each run must exit 0, every rank
must say which rank it is of how many (distinct ranks, world size 2 under torchrun), the
rank-0-only lines must appear once, and the losses rank 0 prints must match the reference.

The reference is the original, unmigrated program run on plain CPU with a gloo process group:
`tests/e2e/cpu_xla` is a tiny test-only stand-in for the torch_xla APIs these programs call
(ranks from the launcher, optimizer_step averaging gradients, spawn starting one process per
device) and for the XLA-based torch-neuronx's `trace` (torch.jit.trace on the CPU). A program
written for xmp.spawn / torch_xla.launch is the reference with two spawned
processes, as it would run on a machine with two devices; a torchrun program runs under
torchrun. Losses must agree within LOSS_RTOL / LOSS_ATOL (float32 on both sides; the reduction
order of the all-reduce is the only difference).

A program that prints `WEIGHTS rank=R sum=S` on every rank (a checksum of its final weights) is
checked for what data parallelism promises: every rank ends with the same weights, and they are
the reference's. A rank whose gradients were never averaged prints a sum of its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from neuron_migrate.ruleset import load_ruleset
from tests.exit_abort import run_twice_on_exit_abort
from tests.ports import free_port

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "fixtures" / "e2e"
STAND_IN = Path(__file__).resolve().parent / "cpu_xla"
LOSS_RTOL = 1e-3
LOSS_ATOL = 1e-4
TIMEOUT_S = 300

# Not anchored to a line: two ranks' prints may share one line of the merged stdout.
RANKINFO = re.compile(r"RANKINFO rank=(\d+) world=(\d+)")
LOSS = re.compile(r"step (\d+) loss (-?\d+\.\d+)")
MASTER = re.compile(r"MASTER[^\n]*")
WEIGHTS = re.compile(r"WEIGHTS rank=(\d+) sum=(-?\d+\.\d+)")


@dataclass(frozen=True)
class Program:
    name: str
    launcher: str  # "torchrun": launched by torchrun as it is; "spawn": starts its own workers
    args: tuple[str, ...] = ()
    # Nothing left for a person: no marker, no torch_xla import in the migrated program (its
    # availability guards resolved, their try/except and functions gone).
    complete: bool = False


PROGRAMS_UNDER_TEST = [
    Program("single_device", "torchrun"),
    Program("torchrun_ddp", "torchrun"),
    Program("xmp_spawn_port", "spawn"),
    Program("legacy_spawn", "spawn"),
    Program("modern_lm", "spawn"),
    Program("third_party_cifar", "spawn"),
    Program("portable_trainer", "torchrun", complete=True),
    Program("version_compat", "spawn", complete=True),
    Program("notebook_launcher", "spawn"),
    Program("legacy_trace", "torchrun", complete=True),
    Program("eval_collective", "torchrun", complete=True),
    Program("nested_guards", "torchrun", complete=True),
    # a memory query left for a person (NM116) that only --profile reaches
    Program("mnist_flags", "spawn", args=("--metrics-debug",)),
    Program("spawn_optional_ddp", "spawn", complete=True),
    Program("spawn_optional_ddp", "spawn", ("--ddp",), complete=True),
    Program("launch_own_init", "spawn", complete=True),
    Program("launch_own_init", "spawn", ("--backend", "xla"), complete=True),
    # one statement of 23 KB holding a site: libcst parses only the rows with one
    Program("sweep_table", "torchrun", complete=True),
]


def _program_id(program: Program) -> str:
    return "+".join([program.name, *(arg.lstrip("-") for arg in program.args)])


def _free_port() -> int:
    return free_port()  # tests/ports.py: not one of the ephemeral ports others are handed


def _torchrun(processes: int = 2) -> list[str]:
    """torchrun, up to the script: its workers run as `python` (torchrun's own `python -u`
    writes a print's text and its newline apart, and another rank's line lands between them)."""
    port = str(_free_port())
    return ["torchrun", "--nproc-per-node", str(processes), "--master-port", port, *_PYTHON]


_PYTHON = ["--no-python", "python"]


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR"):
        env.pop(name, None)
    # Unbuffered, print() writes its text and its newline apart, and ranks sharing the pipe
    # land between them (`_torchrun`); buffered, print(..., flush=True) is one write.
    env.pop("PYTHONUNBUFFERED", None)
    # A free port for the programs that default MASTER_PORT to a fixed one when run as one
    # process: two runs at once (another checkout's suite) would meet on it. torchrun and the
    # stand-in's spawn set their own.
    env["MASTER_PORT"] = str(_free_port())
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _migrate(tmp_path: Path, program: Program) -> tuple[Path, dict]:
    tree = tmp_path / program.name
    shutil.copytree(PROGRAMS / program.name, tree)
    done = _run(
        [sys.executable, "-m", "neuron_migrate", "rewrite", "--apply", "--format", "json", "."],
        tree,
        _clean_env(),
    )
    assert done.returncode == 0, done.stderr
    return tree, json.loads(done.stdout)["summary"]


def _migrated_run(tree: Path, program: Program, processes: int):
    def once() -> subprocess.CompletedProcess[str]:
        launch = ["python"] if processes == 1 else _torchrun(processes)
        argv = [sys.executable, "-m", "neuron_migrate", "run", "--", *launch, "train.py"]
        return _run([*argv, *program.args], tree, _clean_env())

    return run_twice_on_exit_abort(once)


def _reference_run(program: Program, processes: int):
    """The original program on the CPU stand-in, run from its fixture folder."""
    env = _clean_env()
    env["PYTHONPATH"] = str(STAND_IN)
    env["CPU_XLA_DEVICES"] = str(processes)

    # run_original (in the stand-in) runs train.py as `python train.py` does and skips the
    # interpreter teardown that aborts a finished gloo rank now and then.
    original = ["-m", "run_original", "train.py"]

    def once() -> subprocess.CompletedProcess[str]:
        if processes > 1 and program.launcher == "torchrun":
            argv = [sys.executable, "-m", "torch.distributed.run", *_torchrun()[1:], *original]
        else:
            argv = [sys.executable, *original]
        return _run([*argv, *program.args], PROGRAMS / program.name, env)

    return run_twice_on_exit_abort(once)


def _losses(output: str) -> list[tuple[int, float]]:
    return [(int(m.group(1)), float(m.group(2))) for m in LOSS.finditer(output)]


def _check(done, reference, processes: int) -> None:
    said = f"stdout:\n{done.stdout}\nstderr (end):\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert reference.returncode == 0, reference.stderr[-3000:]
    ranks = sorted((int(r), int(w)) for r, w in RANKINFO.findall(done.stdout))
    assert ranks == [(rank, processes) for rank in range(processes)], said
    # rank-0-only lines: once each, as in the reference
    assert MASTER.findall(done.stdout) == MASTER.findall(reference.stdout), said
    got, want = _losses(done.stdout), _losses(reference.stdout)
    assert [s for s, _ in got] == [s for s, _ in want] and want, said
    for (step, value), (_, expected) in zip(got, want, strict=True):
        assert value == pytest.approx(expected, rel=LOSS_RTOL, abs=LOSS_ATOL), (step, said)
    _check_weights(done.stdout, reference.stdout, processes, said)


def _check_weights(output: str, reference: str, processes: int, said: str) -> None:
    """Every rank's weights equal, and equal to the reference's (when the program says them)."""
    want = {int(rank): float(value) for rank, value in WEIGHTS.findall(reference)}
    if not want:
        return
    assert sorted(want) == list(range(processes)), reference
    assert max(want.values()) - min(want.values()) <= LOSS_ATOL, ("reference ranks differ", want)
    got = {int(rank): float(value) for rank, value in WEIGHTS.findall(output)}
    assert sorted(got) == list(range(processes)), said
    expected = want[0]
    for rank, value in sorted(got.items()):
        assert value == pytest.approx(expected, rel=LOSS_RTOL, abs=LOSS_ATOL), (rank, got, said)


@pytest.fixture(scope="module")
def migrated(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Program, Path], tuple[Path, dict]]:
    """A program migrated once for the module, copied into a test's folder: the rewrite does
    not depend on how many processes the test runs it with (one rewrite a program, not two)."""
    done: dict[str, tuple[Path, dict]] = {}

    def copy(program: Program, into: Path) -> tuple[Path, dict]:
        if program.name not in done:
            done[program.name] = _migrate(tmp_path_factory.mktemp("migrated"), program)
        pristine, summary = done[program.name]
        tree = into / program.name
        shutil.copytree(pristine, tree)
        return tree, summary

    return copy


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("program", PROGRAMS_UNDER_TEST, ids=_program_id)
def test_migrated_program_runs_like_the_original(
    tmp_path: Path, program: Program, processes: int, migrated
) -> None:
    tree, summary = migrated(program, tmp_path)
    if program.complete:
        assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
        assert "TODO(neuron-migrate" not in (tree / "train.py").read_text()
    done = _migrated_run(tree, program, processes)
    _check(done, _reference_run(program, processes), processes)


def test_sweep_table_is_rewritten_below_the_statement() -> None:
    """The sweep table stays larger than the statements the rewrite parses whole."""
    from neuron_migrate.rewrite.codemod import trim

    source = (PROGRAMS / "sweep_table" / "train.py").read_text()
    table = source[source.index("SWEEP = [") : source.index("\n]\n")]
    assert len(table) > trim.LARGE_STATEMENT


_REWRITE = [sys.executable, "-m", "neuron_migrate", "rewrite", "--format", "json", "."]


@pytest.fixture(scope="module")
def suite_applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The whole suite rewritten once with --apply, and that run's summary."""
    tree = tmp_path_factory.mktemp("suite") / "e2e"
    shutil.copytree(PROGRAMS, tree)
    done = _run([*_REWRITE, "--apply"], tree, _clean_env())
    return tree, json.loads(done.stdout)["summary"]


def test_a_rerun_over_the_migrated_suite_counts_what_the_first_left(
    suite_applied: tuple[Path, dict],
) -> None:
    """A second rewrite changes nothing and counts, as already marked, every site the first
    left for a person (xmp_spawn_port's Slurm MASTER_ADDR, NM411, whose spawn is gone)."""
    tree, first = suite_applied
    again = json.loads(_run(_REWRITE, tree, _clean_env()).stdout)["summary"]
    assert first["left_for_person"] > 0, first
    assert again["files_changed"] == 0, again
    assert again["left_for_person"] == again["already_marked"] == first["left_for_person"]


def test_suite_conversion_is_at_least_95_percent(suite_applied: tuple[Path, dict]) -> None:
    """Uses rewritten / (rewritten + left for a person) over the whole suite (the first
    rewrite's summary: `--apply` counts what a diff would)."""
    _tree, summary = suite_applied
    assert summary["conversion_percent"] >= 95.0, summary["rules"]


def test_a_site_left_for_a_person_stops_nothing_until_it_is_reached(tmp_path: Path) -> None:
    """mnist_flags keeps one site for a person, a memory query under --profile. Where torch_xla
    is missing (the simulated device has none) the program runs like the original without
    the flag (the suite above); with it, the site raises, naming its rule and advice. The
    report counts the site as left, and as one that raises if reached; none stops the
    program at start."""
    program = Program("mnist_flags", "spawn", args=("--profile",))
    tree, summary = _migrate(tmp_path, program)
    assert summary["stop_at_start"] == 0 and summary["need_torch_xla"] == [], summary
    assert summary["raise_if_reached"] == 1 and summary["left_for_person"] >= 1, summary
    source = (tree / "train.py").read_text()
    assert "TODO(neuron-migrate NM116)" in source
    done = _migrated_run(tree, program, 1)
    advice = load_ruleset().get("NM116").manual
    assert done.returncode != 0
    assert f"NotImplementedError: neuron-migrate NM116: {advice}" in done.stderr, done.stderr
    assert "step 5 loss" in done.stdout  # it ran up to the site
