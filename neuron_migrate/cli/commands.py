"""The command line's table of contents: the program, its commands and the root's options.

Plain data, imported without typer, so that `neuron-migrate --help` draws the root page from
it alone (`help_page.print_root_help`); the typer application (`app`) is built from the same
data, and a test holds the two pages equal.
"""

from __future__ import annotations

PROG = "neuron-migrate"
DESCRIPTION = "Move PyTorch code from torch_xla to the native TorchNeuron `neuron` device."
VERSION_HELP = "Print the version and exit."

# Every command, in the order the help lists them, with the line the help shows for it. Each
# lives in the module `neuron_migrate.cli.<name>`; `app.load_command` gives it the line as its
# `short_help`, so the listing and the command cannot say different things.
COMMANDS = {
    "scan": (
        "Find every torch_xla use and classify every torch op against the compatibility matrix."
    ),
    "rewrite": "Rewrite torch_xla code for the native neuron device (shows a diff unless --apply).",
    "run": "Run a command on a simulated `neuron` device: `run [OPTIONS] -- CMD ...`.",
    "verify": "Scan PATH, run `-- CMD ...` on the simulated device, and reconcile the two.",
    "demo": "Show the four stages on a copy of a bundled sample project (needs the runtime extra).",
    "matrix": "Show the TorchNeuron compatibility matrices: versions, op/API status, differences.",
    "rules": "The rewrite and lint rules.",
    "report": "Work with saved JSON reports.",
    "server": "Keep a process that runs scan and rewrite for this installation, loaded and warm.",
    "lsp": "Serve diagnostics, quick fixes and hovers to an editor (Language Server Protocol).",
}

# The root's options as its help lists them (names, metavar, help): `--version`, typer's two
# completion options and click's help option, in the order the application declares them.
ROOT_OPTIONS = (
    ("--version", "", VERSION_HELP),
    ("--install-completion", "", "Install completion for the current shell."),
    (
        "--show-completion",
        "",
        "Show completion for the current shell, to copy it or customize the installation.",
    ),
    ("-h, --help", "", "Show this message and exit."),
)
ROOT_USAGE = "[OPTIONS] COMMAND [ARGS]..."
