"""Rendering a verify report: terminal, JSON and Markdown."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from neuron_migrate import __version__
from neuron_migrate.verify.reconcile import VerifyReport

SCHEMA_VERSION = "1.1"  # 1.1 added `measures`
VERDICT_STYLE = {"confirmed": "green", "contradicted": "bold red", "not_exercised": "dim"}


def measures(report: VerifyReport) -> str:
    """What the agreement figure measures, said in every format: the scan and the simulated
    device read the same matrix, so they agree by construction wherever the matrix is wrong."""
    return (
        f"The scan and the simulated device both read the matrix of torch-neuronx "
        f"{report.scan.target}, so agreement is consistency, not truth: it shows the code does "
        "what the scan predicted under that matrix, not what TorchNeuron does. For ground truth, "
        "on a Trn2/Trn3 instance run `neuron-migrate matrix probe -- python train.py`, then "
        "`neuron-migrate matrix import neuron-probe.json -o neuron-matrix.yaml`, and verify "
        "with `--matrix neuron-matrix.yaml`."
    )


def _agreement(report: VerifyReport) -> str:
    value = report.agreement
    return "n/a (nothing exercised)" if value is None else f"{value:.0%}"


def verify_to_dict(report: VerifyReport) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "target": report.scan.target,
        "root": report.scan.root,
        "command": list(report.trace.get("command", [])),
        "exit_code": report.exit_code,
        "run_failure": report.run_failure,
        "items": [
            {
                **item.finding.to_json(),
                "verdict": item.verdict,
                "observed": item.observed,
                "reason": item.reason,
                "observed_ops": list(item.ops),
            }
            for item in report.items
        ],
        "unpredicted": [vars(u) for u in report.unpredicted],
        "not_verifiable": [f.to_json() for f in report.not_verifiable],
        "summary": {
            "confirmed": report.count("confirmed"),
            "contradicted": report.count("contradicted"),
            "not_exercised": report.count("not_exercised"),
            "unpredicted": len(report.unpredicted),
            "unpredicted_not_native": sum(1 for u in report.unpredicted if u.status != "native"),
            "not_verifiable": len(report.not_verifiable),
            "agreement": None if report.agreement is None else round(report.agreement, 4),
        },
        "measures": measures(report),
    }


def render_verify_json(report: VerifyReport) -> str:
    return json.dumps(verify_to_dict(report), indent=2) + "\n"


def render_verify_terminal(report: VerifyReport, console: Console, *, show_native: bool) -> None:
    console.print(
        f"[bold]neuron-migrate verify[/] {escape(report.scan.root)}  target torch-neuronx "
        f"{report.scan.target}; the command exited {report.exit_code}"
    )
    if report.run_failure:
        console.print(f"[bold red]run failed[/]: {escape(report.run_failure)}")
    shown = [i for i in report.items if show_native or i.finding.status != "native"]
    for item in shown:
        f = item.finding
        style = VERDICT_STYLE[item.verdict]
        console.print(
            f"  [{style}]{item.verdict:<13}[/] {escape(f.path)}:{f.line} {f.code} "
            f"{escape(f.api)} [dim]predicted {f.status}[/]",
            overflow="fold",
        )
        console.print(f"      [dim]{escape(item.reason)}[/]", overflow="fold")
    missed = [u for u in report.unpredicted if u.status != "native"]
    if missed:
        console.print("\n[bold]Ran, but no finding predicted it[/] (non-native ops):")
        for u in missed:
            console.print(f"  {u.status:<12} {escape(u.op)} at {escape(u.location)} x{u.count}")
    native_missed = len(report.unpredicted) - len(missed)
    if native_missed:
        console.print(
            f"[dim]{native_missed} native op uses ran from lines with no finding "
            "(module calls, operators); see --format json[/]"
        )
    console.print(
        f"\nconfirmed {report.count('confirmed')}, contradicted {report.count('contradicted')}, "
        f"not exercised {report.count('not_exercised')}, not verifiable by a run "
        f"{len(report.not_verifiable)}; [bold]agreement {_agreement(report)}[/]"
    )
    console.print(f"[dim]{escape(measures(report))}[/]")


def render_verify_markdown(report: VerifyReport) -> str:
    lines = [
        f"## neuron-migrate verify: agreement {_agreement(report)}",
        "",
        f"Target torch-neuronx {report.scan.target}; command exit code {report.exit_code}.",
        "",
        measures(report),
        *([f"**Run failed:** {report.run_failure}.", ""] if report.run_failure else []),
        "",
        "| verdict | count |",
        "|---|---|",
        *(f"| {v} | {report.count(v)} |" for v in ("confirmed", "contradicted", "not_exercised")),
        f"| not verifiable by a run | {len(report.not_verifiable)} |",
        "",
        "| verdict | where | rule | API | predicted | observed | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for item in report.items:
        if item.finding.status == "native" and item.verdict == "confirmed":
            continue
        f = item.finding
        lines.append(
            f"| {item.verdict} | `{f.path}:{f.line}` | {f.code} | `{f.api}` | {f.status} | "
            f"{item.observed or '-'} | {item.reason.replace('|', '/')} |"
        )
    missed = [u for u in report.unpredicted if u.status != "native"]
    if missed:
        lines += ["", "Ran, but no finding predicted it:", ""]
        lines += [f"- `{u.op}` ({u.status}) at `{u.location}`, {u.count} calls" for u in missed]
    return "\n".join(lines) + "\n"
