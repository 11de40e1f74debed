"""The exceptions of benchops.

Every error the engine reports is a :class:`BenchopsError`. The subclasses
say which part refused:

* :class:`IntentError`: the intent (or a lane's manifest) is unreadable or
  breaks the contract;
* :class:`StateError`: the state directory lacks what was asked for (an
  unknown benchmark digest, say) or contradicts itself;
* :class:`SchedulerError`: the backend could not launch, observe or stop
  children (``sbatch`` refused, Slurm is not installed, ...);
* :class:`SealError`: a record could not be sealed, signed or written.

Each keeps the whole message (with its causes, as the CLI prints it), the
file it names (``file``), the JSON key path of the first problem (``key``,
for example ``$.matrix.size[2]``) and, when several problems were found,
all of them as ``(key, reason)`` pairs (``issues``).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

__all__ = [
    "BenchopsError",
    "IntentError",
    "StateError",
    "SchedulerError",
    "SealError",
    "WaitTimeout",
]


class BenchopsError(Exception):
    """The base of every benchops error."""

    message: str
    file: Optional[str]
    key: Optional[str]
    issues: List[Tuple[str, str]]

    def __init__(
        self,
        message: str,
        *,
        file: Optional[str] = None,
        key: Optional[str] = None,
        issues: Sequence[Tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.key = key
        self.issues = [(str(k), str(r)) for k, r in issues]


class IntentError(BenchopsError):
    """The intent or manifest is unreadable or invalid."""


class StateError(BenchopsError):
    """The state directory lacks or contradicts what was asked for."""


class SchedulerError(BenchopsError):
    """The backend could not launch, observe or stop children."""


class SealError(BenchopsError):
    """A record could not be sealed, signed or written."""


class WaitTimeout(BenchopsError, TimeoutError):
    """``wait(timeout=...)`` ran out before everything was terminal.

    The children go on running; wait again, or cancel.
    """
