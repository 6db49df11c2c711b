"""How long `neuron-migrate lsp` takes to publish the diagnostics of a changed 3,000-line buffer.

    python bench/lsp_latency.py                      # 3,000 lines, 21 edits
    python bench/lsp_latency.py --lines 6000 --edits 11

The buffer is a training module of torch_xla calls and torch ops, its block repeated to the
wanted length (every block a function of its own, about 2 findings every 3 lines). The server
runs in its own process, driven over pipes as an editor drives it (`tests/lsp/client.py`). After
the first analysis, each edit is one incremental `didChange` (a line typed in the middle of the
buffer), and the time is taken from sending it to reading the `publishDiagnostics` of that
version: the debounce pause (`lsp.server.DEBOUNCE_S`), the analysis, and the transport. Edits
are spaced well apart, so each is published on its own. The same analysis in this process, with
no server, is timed too (CPU time), to show where the time goes. On a shared machine the wall
times follow the load; the server's CPU time per edit (from /proc) does not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lsp.client import LspClient  # noqa: E402

BLOCK = '''\


def step_{n}(model, batch, optimizer, device):
    """One training step."""
    inputs, labels = batch
    inputs = inputs.to(device)
    labels = labels.to(device)
    logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    xm.optimizer_step(optimizer)
    xm.mark_step()
    order = torch.argsort(logits.detach(), dim=-1)
    top = torch.topk(logits.float(), 5).values
    spectrum = torch.fft.rfft(inputs.double())
    xm.master_print(f"step {n}: {{loss.item():.3f}}", top.sum(), order.shape, spectrum.shape)
    return loss
'''

HEAD = "import torch\nimport torch_xla.core.xla_model as xm\n\nDEVICE = xm.xla_device()\n"


def buffer(lines: int) -> str:
    text = HEAD
    n = 0
    while text.count("\n") < lines:
        text += BLOCK.format(n=n)
        n += 1
    return text


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) the process has used: what other jobs on a shared machine
    take from it does not count."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--edits", type=int, default=21)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between edits")
    args = parser.parse_args()

    text = buffer(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / "train.py"
        path.write_text(text)
        client = LspClient(cwd=root)
        try:
            client.initialize(root)
            started = time.perf_counter()
            client.open(path, text)
            first = client.notification("textDocument/publishDiagnostics", uri=path.as_uri())
            opened = time.perf_counter() - started
            latencies: list[float] = []
            cpu: list[float] = []
            middle = text.count("\n") // 2
            for version in range(2, args.edits + 2):
                time.sleep(args.gap)
                typed = f"    x_{version} = torch.sort(torch.ones({version}))\n"
                change = {
                    "range": {
                        "start": {"line": middle, "character": 0},
                        "end": {"line": middle, "character": 0},
                    },
                    "text": typed,
                }
                cpu_before = process_cpu(client.process.pid)
                sent = time.perf_counter()
                client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": path.as_uri(), "version": version},
                        "contentChanges": [change],
                    },
                )
                client.notification(
                    "textDocument/publishDiagnostics", uri=path.as_uri(), version=version
                )
                latencies.append(time.perf_counter() - sent)
                cpu.append(process_cpu(client.process.pid) - cpu_before)
            code = client.stop()
        finally:
            client.kill()

    from neuron_migrate.lsp import analysis

    where = analysis.place(path, [root])
    analysis.analyse(text, where)  # loads the rules, matrix and API map, as the first open did
    alone = []
    for _ in range(5):
        start = time.process_time()
        analysis.analyse(text, where)
        alone.append(time.process_time() - start)

    ms = sorted(1000 * s for s in latencies)
    print(f"buffer: {text.count(chr(10))} lines, {len(first['diagnostics'])} diagnostics")
    print(f"first publish after didOpen (loads the data): {1000 * opened:.0f} ms")
    print(
        f"didChange -> publishDiagnostics over {len(ms)} edits: median {statistics.median(ms):.0f}"
        f" ms, min {ms[0]:.0f} ms, max {ms[-1]:.0f} ms"
    )
    print(
        f"  the server's CPU time per edit: median {1000 * statistics.median(cpu):.0f} ms,"
        f" max {1000 * max(cpu):.0f} ms"
    )
    analysed = 1000 * statistics.median(alone)
    print(f"  of which the analysis (CPU, in this process): median {analysed:.0f} ms")
    print(f"server exit code after shutdown/exit: {code}")


if __name__ == "__main__":
    main()
