import json

import pytest
import typer
from typer.testing import CliRunner

from neuron_migrate.cli.matrix import register
from neuron_migrate.errors import UnknownTargetError, UsageError


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test app."""

    register(app)
    return app


def run(app, *args):
    return CliRunner().invoke(app, ["matrix", *args])


def test_list(app):
    result = run(app, "list")
    assert result.exit_code == 0, result.output
    assert "2.13.3.0" in result.output and "2.14.3.0" in result.output
    data = json.loads(run(app, "list", "--format", "json").output)
    assert [v["torch"] for v in data["versions"]] == ["2.13.0", "2.14.0"]


@pytest.mark.parametrize("name", ["aten::sort", "torch.sort", "Tensor.sort"])
def test_show_answers_for_both_versions_with_source(app, name):
    result = run(app, "show", name)
    assert result.exit_code == 0, result.output
    assert "2.13.3.0" in result.output and "2.14.3.0" in result.output
    assert "cpu_fallback" in result.output
    data = json.loads(run(app, "show", name, "--format", "json").output)
    versions = data["versions"]
    assert [v["version"] for v in versions] == ["2.13.3.0", "2.14.3.0"]
    for v in versions:
        assert v["status"] == "cpu_fallback"
        sort = next(op for op in v["ops"] if op["op"] == "aten::sort")
        assert sort["status"] == "cpu_fallback" and sort["source"]


def test_show_python_api_via_the_map(app):
    data = json.loads(run(app, "show", "torch.nn.functional.layer_norm", "-f", "json").output)
    assert data["versions"][0]["ops"][0]["op"] == "aten::native_layer_norm"
    assert data["versions"][0]["status"] == "native"


def test_show_namespaces(app):
    sparse = json.loads(run(app, "show", "torch.sparse.mm", "-f", "json").output)
    assert sparse["versions"][0]["status"] == "unsupported"
    assert sparse["versions"][0]["namespace"]["namespace"] == "torch.sparse"
    rfft = json.loads(run(app, "show", "torch.fft.rfft", "-f", "json").output)
    assert rfft["versions"][0]["status"] == "unsupported"


def test_show_one_target(app):
    data = json.loads(run(app, "show", "aten::sort", "--target", "2.13", "-f", "json").output)
    assert [v["version"] for v in data["versions"]] == ["2.13.3.0"]


def test_show_unknown_name_is_a_usage_error(app):
    result = run(app, "show", "torch.no_such_api")
    assert isinstance(result.exception, UsageError)
    assert "unknown name" in str(result.exception)


def test_unknown_version_is_a_usage_error(app):
    result = run(app, "diff", "2.13.3.0", "9.9")
    assert isinstance(result.exception, UnknownTargetError)


def test_diff(app):
    result = run(app, "diff", "2.13.3.0", "2.14.3.0")
    assert result.exit_code == 0, result.output
    assert "2.14.0" in result.output and "No op status differences" in result.output
    data = json.loads(run(app, "diff", "2.13.3.0", "2.14.3.0", "--format", "json").output)
    assert data["changed"] == [] and data["rules"][0]["section"] == "torch"


def test_bad_format(app):
    assert isinstance(run(app, "list", "--format", "xml").exception, UsageError)
