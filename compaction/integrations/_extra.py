"""The error a drop-in raises when its framework is not installed.

Without it, a user who forgot the extra sees ``No module named 'langchain'`` and reaches for
``pip install langchain`` — or, worse, for the extra under the import name, which on the
public index is an unrelated package. The message names the distribution and the extra that fit.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint", "missing_extra"]

#: The name on the package index; the import name and the command stay ``compaction``.
DISTRIBUTION = "compaction-ladder"


def install_hint(extra: str) -> str:
    """The pip line that installs ``extra``, quoted for a shell."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(module: str, extra: str, exc: ModuleNotFoundError) -> ImportError:
    """An ImportError for ``module`` naming what is missing and the install line that adds it."""
    missing = exc.name or "a package"
    error = ImportError(f"{module} needs {missing} installed: {install_hint(extra)}")
    error.name = exc.name
    return error
