"""A self-contained HTML report for people who would rather look than read.

One file, no network: the CSS, the sorting/filter script and the SVG charts (findings by
status; the files with the most findings, stacked by status) are all inline. It shows the matrix
version checked against, the gate, suppressions, the baseline and every finding in a table that
sorts on any column and filters as you type, and how much of the matrix rests on which kind of
evidence (the table `neuron-migrate matrix stats` prints).
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport
from neuron_migrate.report.evidence_words import evidence_titles, in_words
from neuron_migrate.report.summary import (
    STATUS_LABEL,
    STATUS_ORDER,
    baseline_state,
    failed_gate_text,
    location,
    partly_scanned,
    sorted_findings,
    summarize,
)
from neuron_migrate.scan.findings import Finding

COLORS = {
    "unsupported": "#c62828",
    "cpu_fallback": "#ef8f00",
    "float64": "#8e24aa",
    "xla": "#00838f",
    "advice": "#1565c0",
    "native": "#2e7d32",
}
TOP_FILES = 15

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1b1b1b}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
.meta{color:#555}.pass{color:#2e7d32;font-weight:600}.fail{color:#c62828;font-weight:600}
.cards{display:flex;flex-wrap:wrap;gap:.75rem;margin:1rem 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.5rem .9rem;min-width:7rem}
.card b{display:block;font-size:1.3rem}
.charts{display:flex;flex-wrap:wrap;gap:2rem}svg text{font-size:12px;fill:#333}
table{border-collapse:collapse;width:100%;margin-top:.5rem}
th,td{border-bottom:1px solid #e4e4e4;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f6f6f6;position:sticky;top:0;user-select:none}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
code{font:12px ui-monospace,Menlo,Consolas,monospace}
.status{display:inline-block;padding:0 .4rem;border-radius:3px;color:#fff;font-size:12px}
.controls{display:flex;gap:1rem;align-items:center;margin:.5rem 0}
input[type=search]{padding:.3rem .5rem;width:20rem}
"""

_JS = """
(function(){
  var table=document.getElementById('findings');var body=table.tBodies[0];
  var heads=table.tHead.rows[0].cells;
  function key(row,i){var c=row.cells[i];var v=c.getAttribute('data-sort');
    if(v===null)v=c.textContent;var n=Number(v);return v!==''&&!isNaN(n)?n:v.toLowerCase();}
  Array.prototype.forEach.call(heads,function(th,i){th.addEventListener('click',function(){
    var asc=!th.classList.contains('asc');
    Array.prototype.forEach.call(heads,function(h){h.classList.remove('asc','desc');});
    th.classList.add(asc?'asc':'desc');
    var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){var x=key(a,i),y=key(b,i);
      if(typeof x!==typeof y){x=String(x);y=String(y);}
      return (x<y?-1:x>y?1:0)*(asc?1:-1);});
    rows.forEach(function(r){body.appendChild(r);});});});
  var search=document.getElementById('filter');var native=document.getElementById('native');
  function apply(){var q=search.value.toLowerCase();
    Array.prototype.forEach.call(body.rows,function(r){
      var hide=(!native.checked&&r.getAttribute('data-status')==='native')||
        (q&&r.textContent.toLowerCase().indexOf(q)<0);r.style.display=hide?'none':'';});}
  search.addEventListener('input',apply);native.addEventListener('change',apply);apply();
})();
"""


def render_html(report: ScanReport) -> str:
    summary = summarize(report)
    gate = summary["gate"]
    statuses = ", ".join(gate["fail_on"]) or "none"
    verdict = (
        f'<span class="pass">gate passed</span> (fail-on: {escape(statuses)})'
        if gate["passed"]
        else f'<span class="fail">gate failed</span>: {escape(failed_gate_text(report, gate))} '
        f"(fail-on: {escape(statuses)})"
    )
    files = summary["files"]
    suppressed = summary["suppressed"]
    cards = [
        ("findings", summary["findings"]),
        ("fail the gate", gate["failing_findings"]),
        ("fixable", summary["fixable"]),
        ("ignored", suppressed["ignore"]),
        ("fixme", suppressed["fixme"]),
        ("unused suppressions", summary["unused_suppressions"]),
        ("files analyzed", files["analyzed"]),
        ("files not scanned", files["errors"] - partly_scanned(report.errors)),
    ]
    if partly_scanned(report.errors):
        cards.append(("files partly scanned", partly_scanned(report.errors)))
    baseline = summary["baseline"]
    if baseline is not None:
        cards += [("new since baseline", baseline["new"]), ("in baseline", baseline["unchanged"])]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>neuron-migrate scan: {escape(report.root)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>neuron-migrate scan of <code>{escape(report.root)}</code></h1>",
        f'<p class="meta">Compatibility matrix: torch-neuronx <b>{escape(report.target)}</b> '
        f"(torch {escape(report.torch_version)}) · neuron-migrate {escape(__version__)}</p>",
        f"<p>{verdict}</p>",
        '<div class="cards">',
        *(f'<div class="card"><b>{value}</b>{escape(label)}</div>' for label, value in cards),
        "</div>",
        '<div class="charts">',
        _status_chart(summary["by_status"]),
        _file_chart(report.findings),
        "</div>",
        "<h2>Findings</h2>",
        '<div class="controls"><input type="search" id="filter" placeholder="filter…">'
        '<label><input type="checkbox" id="native"> show native op uses</label></div>',
        _findings_table(report),
        *_extra_sections(report),
        *_matrix_section(report.target),
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _status_chart(by_status: dict[str, int]) -> str:
    width, label_w, bar_h = 420, 120, 22
    height = bar_h * len(STATUS_ORDER) + 30
    top = max(by_status.values(), default=0) or 1
    rows = [
        f'<svg width="{width}" height="{height}" role="img" '
        'aria-label="Findings by status"><title>Findings by status</title>',
        '<text x="0" y="14" style="font-weight:600">Findings by status</text>',
    ]
    for i, status in enumerate(STATUS_ORDER):
        y = 24 + i * bar_h
        count = by_status.get(status, 0)
        w = round((width - label_w - 50) * count / top)
        rows += [
            f'<text x="0" y="{y + 15}">{escape(STATUS_LABEL[status])}</text>',
            f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{bar_h - 6}" '
            f'fill="{COLORS[status]}"><title>{count}</title></rect>',
            f'<text x="{label_w + w + 6}" y="{y + 15}">{count}</text>',
        ]
    rows.append("</svg>")
    return "\n".join(rows)


def _file_chart(findings: list[Finding]) -> str:
    per_file: dict[str, Counter[str]] = {}
    for f in findings:
        per_file.setdefault(f.path, Counter())[f.status] += 1
    ranked = sorted(per_file.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    ranked = ranked[:TOP_FILES]
    width, label_w, bar_h = 560, 230, 20
    height = bar_h * len(ranked) + 50
    top = max((sum(c.values()) for _, c in ranked), default=0) or 1
    rows = [
        f'<svg width="{width}" height="{height}" role="img" '
        'aria-label="Files with the most findings"><title>Files with the most findings</title>',
        f'<text x="0" y="14" style="font-weight:600">Files with the most findings '
        f"(top {len(ranked)})</text>",
    ]
    for i, (path, counts) in enumerate(ranked):
        y = 24 + i * bar_h
        shown = path if len(path) <= 34 else "…" + path[-33:]
        rows.append(f'<text x="0" y="{y + 14}"><title>{escape(path)}</title>{escape(shown)}</text>')
        x = label_w
        for status in STATUS_ORDER:
            count = counts.get(status, 0)
            if not count:
                continue
            w = max(1, round((width - label_w - 40) * count / top))
            rows.append(
                f'<rect x="{x}" y="{y + 3}" width="{w}" height="{bar_h - 6}" '
                f'fill="{COLORS[status]}"><title>{escape(STATUS_LABEL[status])}: '
                f"{count}</title></rect>"
            )
            x += w
        rows.append(f'<text x="{x + 6}" y="{y + 14}">{sum(counts.values())}</text>')
    legend_y = 24 + len(ranked) * bar_h + 14
    x = 0
    for status in STATUS_ORDER:
        rows.append(
            f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{COLORS[status]}"/>'
            f'<text x="{x + 14}" y="{legend_y}">{escape(STATUS_LABEL[status])}</text>'
        )
        x += 14 + 8 * len(STATUS_LABEL[status]) + 12
    rows.append("</svg>")
    return "\n".join(rows)


def _findings_table(report: ScanReport) -> str:
    head = ("where", "rule", "status", "API", "message", "replacement", "gate", "note")
    titles = evidence_titles(report.target)
    rows = [
        '<table id="findings"><thead><tr>',
        "".join(f"<th>{h}</th>" for h in head),
        "</tr></thead><tbody>",
    ]
    entries = [(f, "") for f in report.findings]
    entries += [
        (s.finding, f"{s.kind}" + (f": {s.reason}" if s.reason else "")) for s in report.suppressed
    ]
    order = {id(f): i for i, f in enumerate(sorted_findings([e[0] for e in entries]))}
    for f, note in sorted(entries, key=lambda e: order[id(e[0])]):
        gate = "" if note else ("fail" if report.fails(f) else "pass")
        state = baseline_state(report, f)
        if not note and state is not None:
            note = f"baseline: {state}"
        sort_key = f"{f.path}\x00{f.cell or 0:06d}{f.line:08d}{f.col:05d}"
        rows.append(
            f'<tr data-status="{f.status}">'
            f'<td data-sort="{escape(sort_key)}"><code>{escape(location(f))}</code></td>'
            f"<td>{escape(f.code)}</td>"
            f'<td data-sort="{STATUS_ORDER.index(f.status)}"><span class="status" '
            f'style="background:{COLORS[f.status]}">{escape(STATUS_LABEL[f.status])}</span></td>'
            f"<td><code>{escape(f.api)}</code></td>"
            f"<td>{escape(in_words(f.message, titles))}</td>"
            f"<td>{'<code>' + escape(f.replacement) + '</code>' if f.replacement else ''}</td>"
            f"<td>{gate}</td><td>{escape(note)}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _extra_sections(report: ScanReport) -> list[str]:
    out = []
    if report.unused_suppressions:
        out += ["<h2>Unused suppressions</h2>", "<ul>"]
        for u in sorted(report.unused_suppressions, key=lambda u: (u.path, u.cell or 0, u.line)):
            cell = f"cell {u.cell}:" if u.cell is not None else ""
            out.append(
                f"<li><code>{escape(u.path)}:{cell}{u.line}</code> "
                f"{escape(u.kind)}[{escape(', '.join(u.codes))}]</li>"
            )
        out.append("</ul>")
    for partial in (False, True):  # a notebook with a cell that does not parse: partly
        errors = sorted((e for e in report.errors if e.partial is partial), key=lambda e: e.path)
        if not errors:
            continue
        out += [f"<h2>Files {errors[0].what}</h2>", "<ul>"]
        out += [f"<li><code>{escape(e.path)}</code>: {escape(e.reason)}</li>" for e in errors]
        out.append("</ul>")
    return out


def _matrix_section(target: str) -> list[str]:
    """The matrix's entries by evidence kind and status, as `matrix stats` counts them."""
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.matrix import load_matrix
    from neuron_migrate.matrix.model import OP_STATUSES
    from neuron_migrate.matrix.stats import matrix_stats

    try:
        stats: dict[str, Any] = matrix_stats(load_matrix(target))
    except NeuronMigrateError:
        return []  # a matrix that is not bundled here: the report says which version it was
    head = ("evidence kind", *OP_STATUSES, "all", "rules", "what it is")
    rows = [
        "<h2>What the matrix rests on</h2>",
        f"<p>torch-neuronx {escape(stats['version'])}: {stats['entries']} listed ops by the kind "
        f"of evidence behind them; unlisted ops are {escape(stats['default']['status'])} "
        f"({escape(stats['default']['kind'])}). <code>neuron-migrate matrix show NAME</code> "
        "prints the evidence of one entry.</p>",
        '<table id="matrix-evidence"><thead><tr>',
        "".join(f"<th>{escape(h)}</th>" for h in head),
        "</tr></thead><tbody>",
    ]
    for kind, by_status in stats["by_kind_and_status"].items():
        total, rules = stats["by_kind"][kind], stats["rules"]["by_kind"][kind]
        if total or rules:
            cells = [kind, *(str(by_status[s]) for s in OP_STATUSES), str(total), str(rules)]
            rows.append(
                "<tr>"
                + "".join(f"<td>{escape(c)}</td>" for c in cells)
                + f"<td>{escape(stats['kinds'][kind])}</td></tr>"
            )
    cells = ["all", *(str(stats["by_status"][s]) for s in OP_STATUSES), str(stats["entries"])]
    cells.append(str(stats["rules"]["count"]))
    rows.append("<tr>" + "".join(f"<td><b>{escape(c)}</b></td>" for c in cells) + "<td></td></tr>")
    rows.append("</tbody></table>")
    if stats["unknowns"]:
        rows.append(f"<p>Not settled by the release: {escape(', '.join(stats['unknowns']))}.</p>")
    return rows
