"""One exception hierarchy. The CLI catches `NeuronMigrateError` once: one red line, exit 2."""


class NeuronMigrateError(Exception):
    """A usage, configuration or data error the user can fix; its message is one line."""


class UsageError(NeuronMigrateError):
    """Bad command-line input: a missing path, an unknown option value."""


class DataFileError(NeuronMigrateError):
    """A bundled or user-supplied data file (matrix, rule, config) is invalid.

    The message names the file and the field:
    ``compat_matrix/2.13.3.0.yaml: ops[3].status: ...``.
    """

    def __init__(self, path: str, field: str, problem: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        super().__init__(f"{path}: {field}: {problem}")


class CacheError(NeuronMigrateError):
    """The result cache's folder cannot be created, read or written."""


class OutputError(NeuronMigrateError):
    """A report or other output cannot be written (`-o` naming a folder, a full disk)."""


class UnknownTargetError(UsageError):
    """`--target` names a torch-neuronx version with no matrix."""


class ServerError(NeuronMigrateError):
    """`neuron-migrate server` could not start the server, or its folder is not private."""
