"""Shell completion: the scripts `--show-completion` prints for bash and zsh are valid shell, and
the completion they ask the command for offers the commands and options."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = str(Path(sys.executable).parent)  # where the `neuron-migrate` script is installed


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
        "NEURON_MIGRATE_NO_SERVER": "1",
        **extra,
    }


def _script(shell: str) -> str:
    """What `neuron-migrate --show-completion` prints when run from `shell`: typer detects the
    shell from the process that started the command (`; true`: the shell must not exec it)."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    done = subprocess.run(
        [shell, "-c", "neuron-migrate --show-completion; true"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def _bash_completes(words: list[str]) -> list[str]:
    """What bash offers for the last of `words`, through the function the script defines."""
    script = _script("bash")
    line = " ".join(words)
    program = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
        '_neuron_migrate_completion neuron-migrate; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "-c", program], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_bash_script_is_valid_and_registers_the_function() -> None:
    script = _script("bash")
    assert "complete -o default -F _neuron_migrate_completion neuron-migrate" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True, timeout=60)


def test_bash_completes_commands_group_commands_and_options() -> None:
    assert _bash_completes(["neuron-migrate", "sc"]) == ["scan"]
    assert set(_bash_completes(["neuron-migrate", "matrix", "s"])) >= {"show", "stats"}
    assert "--no-cache" in _bash_completes(["neuron-migrate", "scan", "--no-c"])


def test_the_zsh_script_is_valid_and_completes_commands() -> None:
    script = _script("zsh")
    assert "compdef _neuron_migrate_completion neuron-migrate" in script
    subprocess.run(["zsh", "-n"], input=script, text=True, check=True, timeout=60)
    # What the script's function asks the command for, as zsh would.
    done = subprocess.run(
        ["neuron-migrate"],
        env=_env(_NEURON_MIGRATE_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="neuron-migrate sc"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"scan":' in done.stdout and '"rewrite":' not in done.stdout
