"""requirements / constraints, pyproject.toml, setup.cfg, setup.py and conda environments."""

from tests.project_files.helpers import findings, rewritten, scan_error

REQUIREMENTS = """\
# pinned by pip-compile
--index-url https://pip.repos.neuron.amazonaws.com
-r base.txt
-e .
torch-neuronx==2.9.0.2.15.32035 ; python_version >= "3.10" and platform_machine == "x86_64" \\
    --hash=sha256:aaaa --hash=sha256:bbbb
torch-xla[pjrt]==2.9.0  # the XLA runtime
torch>=2.1,<2.10
https://example.com/pkg.whl
torch-neuronx==2.14.*
numpy
"""


def test_requirements_with_options_markers_hashes_and_urls() -> None:
    found = findings(REQUIREMENTS, "requirements")
    assert [(f.code, f.line, f.col, f.end_col) for f in found] == [
        ("NM811", 5, 0, 91),
        ("NM810", 7, 0, 22),
        ("NM811", 8, 0, 16),
    ]
    assert "==2.9.0.2.15.32035" in found[0].message
    assert "torch-neuronx==2.14.* with torch==2.14.0" in found[0].message


def test_the_pin_fix_keeps_markers_comments_and_hash_checked_lines() -> None:
    new = rewritten(REQUIREMENTS, "requirements", unsafe=True)
    lines = new.splitlines()
    # The hash-checked requirement keeps its version (new hashes would be needed): a marker.
    assert lines[4].startswith("# TODO(neuron-migrate NM811)")
    assert lines[5].startswith("torch-neuronx==2.9.0.2.15.32035 ; python_version")
    assert "torch==2.14.0" in lines
    assert "torch-xla[pjrt]==2.9.0  # the XLA runtime" in lines
    assert rewritten(new, "requirements", unsafe=True) == new


PYPROJECT = """\
# The training package.
[build-system]
requires = ["hatchling"]   # odd   spacing stays
build-backend = "hatchling.build"

[project]
name    = "train"
requires-python = '>=3.9'  # tested on 3.9
dependencies = [
  "numpy>=1.26",            # arrays
  'torch-neuronx == 2.9.0.2.15.32035',
  "torch>=2.1,<2.10 ; platform_machine == 'x86_64'",
]

[project.optional-dependencies]
xla = ["torch-xla==2.9.0", ]

[tool.other]
keep = { inline = true,  spacing = "as is" }
"""


def test_pyproject_findings() -> None:
    found = findings(PYPROJECT, "pyproject")
    assert [(f.code, f.line) for f in found] == [
        ("NM812", 8),
        ("NM811", 11),
        ("NM811", 12),
        ("NM810", 16),
    ]


def test_pyproject_survives_apply_byte_for_byte_outside_the_edited_values() -> None:
    new = rewritten(PYPROJECT, "pyproject", unsafe=True)
    expected = (
        PYPROJECT.replace("'torch-neuronx == 2.9.0.2.15.32035'", "'torch-neuronx ==2.14.*'")
        .replace('"torch>=2.1,<2.10 ;', '"torch==2.14.0 ;')
        .replace(
            "requires-python = '>=3.9'",
            "# TODO(neuron-migrate NM812): TorchNeuron wheels exist for Python 3.12, 3.13 and "
            "3.14 only: raise the floor to 3.12\nrequires-python = '>=3.9'",
        )
        .replace(
            'xla = ["torch-xla==2.9.0", ]',
            "# TODO(neuron-migrate NM810): an XLA-era package: remove it once no code imports it"
            " (the native device needs only torch-neuronx and its torch); TorchNeuron 2.14.3.1"
            " needs torch-neuronx==2.14.* with torch==2.14.0 on Python 3.12-3.14\n"
            'xla = ["torch-xla==2.9.0", ]',
        )
    )
    assert new == expected
    assert rewritten(new, "pyproject", unsafe=True) == new


def test_setup_cfg_and_setup_py() -> None:
    cfg = "[metadata]\nname = t\n\n[options]\npython_requires = >=3.8\ninstall_requires =\n"
    cfg += "    torch-xla\n    numpy\n"
    assert [(f.code, f.line) for f in findings(cfg, "setup-cfg")] == [("NM812", 5), ("NM810", 7)]
    setup_py = (
        "from setuptools import setup\n\n"
        "setup(\n    name='t',\n    python_requires='>=3.12',\n"
        "    install_requires=['torch==2.9.0', 'numpy'],\n"
        "    extras_require={'xla': ['libneuronxla']},\n)\n"
    )
    found = findings(setup_py, "setup-py")
    assert [(f.code, f.line, f.col) for f in found] == [("NM811", 6, 23), ("NM810", 7, 29)]


def test_conda_environment() -> None:
    env = (
        "name: train\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n"
        "  - conda-forge::numpy\n  - pip:\n      - torch-xla==2.9.0\n"
        "variables:\n  XLA_USE_BF16: '1'\n"
    )
    assert [(f.code, f.line) for f in findings(env, "conda")] == [
        ("NM812", 4),
        ("NM810", 7),
    ]


def test_unparseable_dependency_files_are_errors() -> None:
    assert scan_error("[project\nname = 1\n", "pyproject").startswith("invalid TOML")
    assert scan_error("torch ===\n", "requirements").startswith("invalid requirement 'torch ==='")
    assert scan_error("setup(\n", "setup-py").startswith("syntax error at line")
