"""The ``benchops-exec`` console script: the Rust CLI, run in this process.

The package installs it so that the local and Slurm backends have a
``benchops-exec`` to start as the child wrapper, and so that the CLI and
the Python API are one program.
"""

from __future__ import annotations

import sys
from typing import List, Optional

from . import _native


def main(argv: Optional[List[str]] = None) -> int:
    """Runs ``benchops-exec`` with ``argv`` (default: ``sys.argv``)."""
    args = list(sys.argv if argv is None else argv)
    if args:
        args[0] = "benchops-exec"
    sys.stdout.flush()
    sys.stderr.flush()
    code = _native.cli_main(args)
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
