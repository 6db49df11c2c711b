"""Which project files besides Python a scan reads, and what kind each is (by name, or by a
shell shebang for files without an extension)."""

import fnmatch
import os
import re

# (kind, name patterns), first match wins; names are matched case-sensitively, as on Linux.
_BY_NAME: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dockerfile", ("Dockerfile", "Dockerfile.*", "*.Dockerfile", "*.dockerfile", "Containerfile")),
    ("pyproject", ("pyproject.toml",)),
    ("pipfile", ("Pipfile",)),
    ("setup-cfg", ("setup.cfg",)),
    ("tox", ("tox.ini",)),
    ("setup-py", ("setup.py",)),
    (
        "requirements",
        ("requirements*.txt", "*requirements.txt", "requirements*.in", "constraints*.txt"),
    ),
    ("conda", ("environment.yml", "environment.yaml", "environment-*.yml", "environment-*.yaml")),
    ("shell", ("*.sh", "*.bash", "*.sbatch", "*.slurm")),
    ("makefile", ("Makefile", "makefile", "GNUmakefile", "*.mk")),
    ("dotenv", (".env", ".env.*", "*.env")),
    ("yaml", ("*.yml", "*.yaml")),
    ("json", ("*.json",)),
)
_SHEBANG = re.compile(rb"^#![ \t]*\S*/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?:ba|da|k|z)?sh\b")
# What a project file must contain to be worth parsing (the Python prefilter's role): the XLA
# and Neuron names, launchers, instance types, DLAMI environments -- and, in dependency files,
# the Python version a project declares.
NEEDLES = re.compile(
    rb"torch|xla|XLA|PJRT_|NEURON|TPU_|XRT_|ALLREDUCE_GRADIENTS|neuron|xlarge|_venv_"
)
DEPENDENCY_NEEDLES = re.compile(rb"torch|xla|neuron|python")
DEPENDENCY_KINDS = frozenset(
    {"requirements", "pyproject", "pipfile", "setup-cfg", "setup-py", "conda"}
)


# One expression for every pattern, a group per kind: a tree walk asks about every file it meets.
_NAMES = re.compile(
    "|".join(
        f"(?P<{kind.replace('-', '_')}>{'|'.join(fnmatch.translate(p) for p in patterns)})"
        for kind, patterns in _BY_NAME
    )
)


def kind_by_name(display: str) -> str | None:
    """The kind of project file `display` names, or None (Python, notebooks, anything else)."""
    folder, _, name = display.rpartition("/")
    found = _NAMES.match(name)
    if found is not None and found.lastgroup is not None:
        return found.lastgroup.replace("_", "-")
    if folder.rpartition("/")[2] == "requirements" and name.endswith((".txt", ".in")):
        return "requirements"
    return None


def may_be_shell_script(name: str) -> bool:
    """An extension-less name worth a look at its first line (`run`, `launch_train`)."""
    return "." not in name and name not in (
        "Makefile",
        "Pipfile",
        "LICENSE",
        "README",
        "NOTICE",
        "OWNERS",
    )


def is_shell_shebang(head: bytes) -> bool:
    return _SHEBANG.match(head) is not None


def may_hold_findings(data: bytes, kind: str) -> bool:
    if kind == "tox":  # dependencies, and the environment and commands of a test run
        return NEEDLES.search(data) is not None or DEPENDENCY_NEEDLES.search(data) is not None
    if kind in DEPENDENCY_KINDS:
        return DEPENDENCY_NEEDLES.search(data) is not None
    return NEEDLES.search(data) is not None


def kind_of(display: str, data: bytes | None = None) -> str | None:
    """The kind of a file by name, or "shell" for an extension-less script whose first line is a
    shell shebang (`data`: its first bytes at least)."""
    kind = kind_by_name(display)
    if kind is None and data is not None and data.startswith(b"#!"):
        name = display.rpartition("/")[2]
        if may_be_shell_script(name) and is_shell_shebang(data[:200]):
            return "shell"
    return kind


def head_is_shell(path: str) -> bool:
    """Whether the file at `path` starts with a shell shebang (an unreadable one, or one that
    is not a regular file: no; a FIFO is never opened to wait for a writer)."""
    import stat

    from neuron_migrate.project.source import OPEN_FLAGS

    try:
        fd = os.open(path, OPEN_FLAGS)
        try:
            return stat.S_ISREG(os.fstat(fd).st_mode) and is_shell_shebang(os.read(fd, 200))
        finally:
            os.close(fd)
    except OSError:
        return False


def discovered_kind(path: str, display: str) -> str | None:
    """The kind of a file a tree walk meets: by name, or by its shebang when it has no
    extension (only those files are opened)."""
    kind = kind_by_name(display)
    if kind is None:
        name = display.rpartition("/")[2]
        if may_be_shell_script(name) and head_is_shell(path):
            return "shell"
    return kind
