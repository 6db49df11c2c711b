"""Device-string idioms in the shapes real code writes them, found by scan and rewritten alike."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api
from neuron_migrate.rewrite.codemod.engine import rewrite_source


def _scan(tmp_path: Path, source: str) -> set[tuple[int, str, str]]:
    path = tmp_path / "device_checks.py"
    path.write_text(source)
    report = api.scan(path, jobs=1, use_cache=False)
    return {(f.line, f.code, f.api) for f in report.findings if f.status != "native"}


def test_a_device_prefix_test_is_a_device_type_test(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import torch


        def on_xla(t, device):
            if str(device).startswith("xla"):
                return True
            device_str = str(t.device)
            return device_str.startswith('xla'), "xla_model".startswith("xla")
        """
    )
    assert _scan(tmp_path, source) == {
        (5, "NM103", "xla-device-type-compare:xla"),
        (8, "NM103", "xla-device-type-compare:xla"),
    }
    new = rewrite_source(source).new
    assert 'if str(device).startswith("neuron"):' in new
    # the string that is not a device keeps its test
    assert 'return device_str.startswith(\'neuron\'), "xla_model".startswith("xla")' in new


def test_a_device_string_in_a_branch_of_a_conditional(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import torch


        def run(model, x, tpu, cuda, dtype):
            device = "xla" if tpu else "cpu"
            model.to(torch.device("cuda" if cuda else "xla:0" if tpu else "cpu"))
            x = x.to("xla" if tpu else "cpu")
            with torch.autocast(device_type="xla" if tpu else "cuda", dtype=dtype):
                y = model(x)
            with torch.autocast("xla" if tpu else "cuda"):
                y = model(x)
            return y, device, "xla" if tpu else "tf"
        """
    )
    assert _scan(tmp_path, source) == {
        (5, "NM102", "xla-device-string:xla"),
        (6, "NM102", "xla-device-string:xla:0"),
        (7, "NM102", "xla-device-string:xla"),
        (8, "NM102", "xla-device-string:xla"),
        (10, "NM102", "xla-device-string:xla"),
    }
    result = rewrite_source(source)
    lines = result.new.splitlines()
    assert '    device = "neuron" if tpu else "cpu"' in lines
    assert '"neuron:0" if tpu else "cpu"' in result.new
    assert '    x = x.to("neuron" if tpu else "cpu")' in lines
    assert '    with torch.autocast(device_type="neuron" if tpu else "cuda", dtype=dtype):' in lines
    # no dtype: bfloat16 written out for the neuron branch would change the cuda one's
    marked = lines.index('    with torch.autocast("xla" if tpu else "cuda"):')
    assert lines[marked - 1].startswith("    # TODO(neuron-migrate NM102)")
    assert [o.status for o in result.outcomes] == ["rewritten"] * 4 + ["marked"]


def test_a_device_string_given_to_an_attribute_or_an_annotated_name(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        def configure(args, trainer):
            if args.device == "auto":
                args.device = "xla"
            trainer._device: str = "xla:0"
            trainer.name = "xla"
            if args.device == "xla":
                return trainer
        """
    )
    assert _scan(tmp_path, source) == {
        (3, "NM102", "xla-device-string:xla"),
        (4, "NM102", "xla-device-string:xla:0"),
        (6, "NM103", "xla-device-type-compare:xla"),
    }
    new = rewrite_source(source).new
    # the value set and the value tested change together
    assert '        args.device = "neuron"' in new.splitlines()
    assert '    if args.device == "neuron":' in new.splitlines()
    assert '    trainer._device: str = "neuron:0"' in new.splitlines()
    assert '    trainer.name = "xla"' in new.splitlines()
