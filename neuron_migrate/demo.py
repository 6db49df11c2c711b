"""`neuron-migrate demo`: the four stages on a bundled sample project, one after the other.

A copy of the sample goes to a temporary folder; the bundled files are never touched.
scan (what must change) -> rewrite (the diff, then applied) -> run (the migrated code on the
simulated device) -> verify (the scan of the migrated code reconciled with the run).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.syntax import Syntax

from neuron_migrate import api
from neuron_migrate.errors import UsageError
from neuron_migrate.resources import DEFAULT_PROJECT, sample_projects_dir

_LOSS = re.compile(r"step (\d+) loss ([0-9.eE+-]+|nan|inf)")


def sample_projects() -> list[str]:
    root = sample_projects_dir()
    return sorted(p.name for p in root.iterdir() if (p / "train.py").is_file())


@dataclass
class DemoResult:
    project: str
    workdir: Path
    scan_xla_uses: int
    rewrite_conversion: float
    files_changed: int
    run_exit_code: int
    losses: list[float]
    agreement: float | None
    confirmed: int
    contradicted: int
    not_exercised: int


def run_demo(
    console: Console,
    *,
    project: str = DEFAULT_PROJECT,
    steps: int = 5,
    target: str | None = None,
    keep: bool = False,
) -> DemoResult:
    from neuron_migrate.report.terminal import render_terminal
    from neuron_migrate.report.verify_report import render_verify_terminal
    from neuron_migrate.rewrite.rewriter import RewriteSummary, rewrite_tree, write_atomically
    from neuron_migrate.verify import runner
    from neuron_migrate.verify.reconcile import reconcile

    available = sample_projects()
    if project not in available:
        raise UsageError(f"demo: no sample project {project!r}; choose from {', '.join(available)}")
    workdir = Path(tempfile.mkdtemp(prefix="neuron-migrate-demo-"))
    tree = workdir / project
    shutil.copytree(sample_projects_dir() / project, tree)
    console.print(
        f"[bold]neuron-migrate demo[/]: sample project [cyan]{project}[/] copied to {tree}"
    )

    console.print(Rule("1. scan: what must change, and will it run?"))
    scan = api.scan(tree, target=target, fail_on=("none",), use_cache=False)
    render_terminal(scan, console)

    console.print(Rule("2. rewrite: the migration as a diff, then applied"))
    summary = RewriteSummary()
    for rewritten in rewrite_tree(tree, target=scan.target):
        summary.add(rewritten)
        if rewritten.changed:
            console.print(Syntax(rewritten.diff(), "diff", theme="ansi_dark", word_wrap=True))
            write_atomically(rewritten.path, rewritten.encoded())
    for line in summary.lines("changed"):
        console.print(escape(line), highlight=False)

    console.print(Rule("3. run: the migrated code on the simulated neuron device"))
    command = ["python", "train.py", "--steps", str(steps), "--log-every", "1"]
    console.print(f"$ neuron-migrate run -- {' '.join(command)}   (in {tree})")
    # What the sample writes to the temporary folder (the MLP's weights, compiler caches) goes
    # to the demo's own folder, removed with it, never to a fixed name in the shared one.
    own_tmp = workdir / "tmp"
    own_tmp.mkdir()
    result = runner.run(
        command, scan.target, capture_output=True, cwd=tree, extra_env={"TMPDIR": str(own_tmp)}
    )
    console.print(escape(result.output.rstrip()), highlight=False)
    for line in runner.summary_lines(result.trace):
        console.print(escape(line), highlight=False)
    losses = [float(m.group(2)) for m in _LOSS.finditer(result.output)]

    console.print(Rule("4. verify: the static report confirmed by the run"))
    migrated = api.scan(tree, target=scan.target, fail_on=("none",), use_cache=False)
    report = reconcile(migrated, result.trace, cwd=tree)
    render_verify_terminal(report, console, show_native=False)

    outcome = DemoResult(
        project=project,
        workdir=workdir,
        scan_xla_uses=sum(1 for f in scan.findings if f.status == "xla"),
        rewrite_conversion=summary.conversion,
        files_changed=summary.changed,
        run_exit_code=result.exit_code,
        losses=losses,
        agreement=report.agreement,
        confirmed=report.count("confirmed"),
        contradicted=report.count("contradicted"),
        not_exercised=report.count("not_exercised"),
    )
    console.print(Rule("summary"))
    falling = len(losses) >= 2 and losses[-1] < losses[0]
    refusals = result.trace.get("refusals", [])
    stopped = f" (refused {refusals[0]['op']} at {refusals[0]['location']})" if refusals else ""
    agreement = "n/a" if outcome.agreement is None else f"{outcome.agreement:.0%}"
    console.print(
        f"scan: {outcome.scan_xla_uses} torch_xla uses | rewrite: {outcome.files_changed} files, "
        f"{outcome.rewrite_conversion:.0f}% converted | run: exit {outcome.run_exit_code}{stopped}"
        + (
            f", loss {losses[0]:.4f} -> {losses[-1]:.4f}{' (falling)' if falling else ''}"
            if losses
            else ""
        )
        + f" | verify: agreement {agreement} ({outcome.confirmed} confirmed, "
        f"{outcome.contradicted} contradicted, {outcome.not_exercised} not exercised)"
    )
    if keep:
        console.print(f"migrated copy kept in {tree}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome
