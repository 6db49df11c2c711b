"""XLA-era variables set in the environment a launcher hands a child process are reported
like those set in os.environ, and left for a person by the rewrite."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api
from neuron_migrate.rewrite.codemod.engine import rewrite_source

SOURCE = textwrap.dedent(
    """\
    import os
    import subprocess


    def launch(cmd, cores):
        env = os.environ.copy()
        env["PJRT_DEVICE"] = "NEURON"
        env["NEURON_RT_VISIBLE_CORES"] = f"0-{cores - 1}"
        env.update({"XLA_USE_BF16": "1"})
        subprocess.run(cmd, env=env)
        subprocess.run(cmd, env={**os.environ, "XLA_IR_DEBUG": "1"})
        subprocess.run(cmd, env=dict(os.environ, XLA_DOWNCAST_BF16="1"))
        config = {"PJRT_DEVICE": "not an environment"}
        return config["PJRT_DEVICE"]
    """
)


def test_variables_of_a_child_environment_are_found(tmp_path: Path) -> None:
    path = tmp_path / "launch.py"
    path.write_text(SOURCE)
    report = api.scan(path, jobs=1, use_cache=False)
    found = {(f.line, f.code, f.api) for f in report.findings}
    assert found == {
        (7, "NM701", "xla-env-var:PJRT_DEVICE"),
        (8, "NM711", "xla-env-var:NEURON_RT_VISIBLE_CORES"),
        (9, "NM702", "xla-env-var:XLA_USE_BF16"),
        (11, "NM703", "xla-env-var:XLA_IR_DEBUG"),
        (12, "NM702", "xla-env-var:XLA_DOWNCAST_BF16"),
    }
    result = rewrite_source(SOURCE)
    assert {(o.line, o.code, o.status) for o in result.outcomes} == {
        (7, "NM701", "marked"),
        (8, "NM711", "kept"),
        (9, "NM702", "marked"),
        (11, "NM703", "marked"),
        (12, "NM702", "marked"),
    }
    assert result.new.count("TODO(neuron-migrate NM7") == 4


def _scanned(path: Path, source: str) -> set[tuple[int, str]]:
    """(line, code) of each finding scan reports for `source`, written at `path`."""
    path.write_text(source)
    return {(f.line, f.code) for f in api.scan(path, jobs=1, use_cache=False).findings}


def test_a_variable_given_a_value_that_is_no_literal_is_marked_as_the_scan_reports_it(
    tmp_path: Path,
) -> None:
    source = (
        "import os\n\n"
        "os.environ.update(XLA_USE_BF16=flag)\n"
        'os.environ.update(XLA_FLAGS=f"--xla_dump_to={folder}")\n'
        'os.environ["XLA_" "IR_DEBUG"] = "1"\n'
        "child = dict(os.environ, PJRT_DEVICE=device)\n"
    )
    scanned = _scanned(tmp_path / "setup_env.py", source)
    assert scanned == {(3, "NM702"), (4, "NM703"), (5, "NM703"), (6, "NM701")}
    result = rewrite_source(source)
    assert [(o.line, o.code, o.status) for o in result.outcomes] == [
        (line, code, "marked") for line, code in sorted(scanned)
    ]
    for line in source.splitlines()[2:]:
        above = result.new.splitlines()[result.new.splitlines().index(line) - 1]
        assert above.startswith("# TODO(neuron-migrate NM7")


def test_a_variable_read_in_a_compound_statement_header_is_marked(tmp_path: Path) -> None:
    source = (
        "import os\n\n"
        'if os.environ.get("PJRT_DEVICE") == "NEURON":\n'
        "    pass\n"
        'while os.environ.get("XLA_USE_BF16"):\n'
        "    break\n"
    )
    scanned = _scanned(tmp_path / "checks.py", source)
    assert scanned == {(3, "NM701"), (5, "NM702")}
    result = rewrite_source(source)
    assert sorted((o.line, o.code, o.status) for o in result.outcomes) == [
        (3, "NM701", "marked"),
        (5, "NM702", "marked"),
    ]
    lines = result.new.splitlines()
    for header in ('if os.environ.get("PJRT_DEVICE") == "NEURON":', "while os.environ.get("):
        at = next(i for i, line in enumerate(lines) if line.startswith(header))
        assert lines[at - 1].startswith("# TODO(neuron-migrate NM70")
