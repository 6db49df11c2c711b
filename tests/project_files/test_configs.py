"""YAML and JSON job configs: anchors, block scripts, env lists, flow styles, bad input."""

from tests.project_files.helpers import findings, rewritten, scan_error

NM701 = "# TODO(neuron-migrate NM701): drop PJRT_DEVICE; nothing on the native path reads it\n"
WORKFLOW = """\
# a CI workflow
x-neuron-env: &neuron-env
  PJRT_DEVICE: NEURON   # the XLA device
  FI_EFA_USE_DEVICE_RDMA: "1"
jobs:
  train:
    runs-on: [self-hosted, trn1.32xlarge]
    env: *neuron-env
    steps:
      - name: train
        run: |-
          set -e
          export PJRT_DEVICE=NEURON
          torchrun --nproc_per_node=32 train.py
      - run: >
          XLA_IR_DEBUG=1 python folded.py
      - run: 'PJRT_DEVICE=NEURON python quoted.py'
---
kind: Pod
spec:
  containers:
    - name: t
      env: {PJRT_DEVICE: NEURON}
"""


def test_an_anchor_is_reported_once_where_it_is_defined() -> None:
    found = [(f.code, f.line, f.col) for f in findings(WORKFLOW, "yaml")]
    assert found == [
        ("NM701", 3, 2),
        ("NM813", 7, 27),
        ("NM701", 13, 17),
        ("NM422", 14, 10),
        ("NM703", 15, 13),  # a folded scalar: reported where it starts
        ("NM701", 17, 14),
        ("NM701", 23, 12),
    ]


def test_the_rewrite_edits_literal_blocks_and_plain_scalars_and_marks_the_rest() -> None:
    new = rewritten(WORKFLOW, "yaml")
    assert new == (
        WORKFLOW.replace("  PJRT_DEVICE: NEURON   # the XLA device\n", "")
        .replace("          export PJRT_DEVICE=NEURON\n", "")
        .replace("'PJRT_DEVICE=NEURON python quoted.py'", "'python quoted.py'")
        .replace(
            "    runs-on:",
            "    # TODO(neuron-migrate NM813): TorchNeuron runs on Trn2 and Trn3 only (for example"
            " trn2.3xlarge, trn2.48xlarge); Trn1 and Inf2 stay on the legacy XLA library\n"
            "    runs-on:",
        )
        .replace(
            "      - run: >",
            "      # TODO(neuron-migrate NM703): drop this XLA variable; keep compiler artifacts"
            " with TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 (written under"
            " TORCH_NEURONX_DEBUG_DIR)\n      - run: >",
        )
        .replace("      env: {PJRT", "      " + NM701 + "      env: {PJRT")
    )
    assert rewritten(new, "yaml") == new


def test_kubernetes_env_lists() -> None:
    text = (
        "env:\n  - name: PJRT_DEVICE\n    value: NEURON\n"
        "  - name: RANK\n    valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
    )
    assert rewritten(text, "yaml") == (
        "env:\n  - name: RANK\n    valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
    )
    only = "env:\n  - name: PJRT_DEVICE\n    value: NEURON\n"
    assert (
        rewritten(only, "yaml") == "env:\n  " + NM701 + "  - name: PJRT_DEVICE\n    value: NEURON\n"
    )


def test_json_is_reported_and_never_edited() -> None:
    text = '{"Environment": {"PJRT_DEVICE": "NEURON"},\n "InstanceType": "ml.trn1.32xlarge"}\n'
    assert [(f.code, f.line, f.col) for f in findings(text, "json")] == [
        ("NM701", 1, 17),
        ("NM813", 2, 18),
    ]
    assert rewritten(text, "json") == text


def test_unparseable_configs_are_errors() -> None:
    assert scan_error("a: [1,\n", "yaml").startswith("invalid YAML at line 2")
    assert scan_error('{"a": 1,}', "json").startswith("invalid JSON")


def test_a_template_that_is_yaml_only_once_rendered_is_not_an_error() -> None:
    text = "spec:\n  {{- if .Values.neuron }}\n  instanceType: trn1.32xlarge\n  {{- end }}\n"
    assert [(f.code, f.line, f.col) for f in findings(text, "yaml")] == [("NM813", 3, 16)]


def test_kubernetes_command_and_args_split_a_shell_script() -> None:
    text = (
        "containers:\n  - name: train\n    command: [/bin/bash, -c]\n    args:\n      - |\n"
        "        export PJRT_DEVICE=NEURON\n"
        "        neuron_parallel_compile torchrun --nproc_per_node=32 train.py\n"
    )
    found = [(f.code, f.line, f.col) for f in findings(text, "yaml")]
    assert found == [("NM701", 6, 15), ("NM420", 7, 8), ("NM422", 7, 32)]
    assert "export PJRT_DEVICE" not in rewritten(text, "yaml")


def test_a_minified_line_gives_bounded_snippets() -> None:
    entries = ", ".join(f'"K{i}": "{i}"' for i in range(400))
    text = '{"env": {' + entries + ', "PJRT_DEVICE": "NEURON"}}\n'
    (finding,) = findings(text, "json")
    assert finding.code == "NM701" and finding.col == text.index('"PJRT_DEVICE"')
    assert len(finding.snippet) < 200 and "PJRT_DEVICE" in finding.snippet


def test_aliases_fanning_out_are_read_once() -> None:
    # "Billion laughs": each level names the previous one nine times. Aliases are one node.
    lines = ["a: &a [{PJRT_DEVICE: NEURON}]"]
    for level in range(1, 12):
        previous = "*a" if level == 1 else f"*l{level - 1}"
        lines.append(f"l{level}: &l{level} [{', '.join([previous] * 9)}]")
    text = "\n".join(lines) + "\n"
    assert [(f.code, f.line) for f in findings(text, "yaml")] == [("NM701", 1)]
