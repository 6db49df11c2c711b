"""The base of the mutable records a scan makes: slots, compared and printed by their values.

The immutable records are named tuples and these are plain classes, not dataclasses: every
scan process imports a dozen records, and a dataclass costs about 0.7 ms to define (its
methods are compiled from source when its module is imported), besides the import of
`dataclasses` itself, which loads `inspect` -- together a tenth of a re-scan that the cache
answers (bench/README.md).

For the same reason a module that defines named tuples does not use `from __future__ import
annotations`: `typing.NamedTuple` compiles each field's annotation when it is a string (a
`ForwardRef` each), about 3 ms of a re-scan over the records it loads. Its annotations are
evaluated instead, and only names that exist for the type checker alone are quoted.
"""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """A record's `_fields` are its fields, in the order its `__init__` takes them, as a named
    tuple's are; its `__slots__` are the same names."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable: as a dataclass that is not frozen

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({values})"

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:
        # To the worker pool and back, and into the cache: positional values, no state dict.
        return type(self), tuple(getattr(self, name) for name in self._fields)
