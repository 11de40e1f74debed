"""Shared helpers of the Python package's tests.

The tests run from the repository root (``cargo xtask python``) with the
built wheel installed in a fresh virtual environment. ``BENCHOPS_CLI`` names
the Rust ``benchops-exec`` binary the parity tests compare with; without it
the package's own console script stands in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "bench.toml"


def cli() -> str:
    """The Rust CLI the package is compared with."""
    path = os.environ.get("BENCHOPS_CLI") or shutil.which("benchops-exec")
    assert path, "no benchops-exec: set BENCHOPS_CLI or install the package"
    return path


def run_cli(state: Path, *args: str) -> "subprocess.CompletedProcess[bytes]":
    """Runs the CLI with ``--state state``; output as bytes."""
    return subprocess.run(
        [cli(), "--state", str(state), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=300,
        check=False,
    )


def python(
    code: str, *args: str, env: Optional[Dict[str, str]] = None, timeout: float = 300
) -> "subprocess.CompletedProcess[str]":
    """Runs ``code`` in a fresh interpreter (this one's executable)."""
    full = dict(os.environ)
    if env:
        full.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        env=full,
        check=False,
    )


def json_out(p: "subprocess.CompletedProcess[str]") -> List[object]:
    """The JSON lines a child interpreter printed, after checking it passed."""
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def slurm_ready() -> Optional[str]:
    """``None`` when the Slurm cluster answers, else why not."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "Slurm is not installed (no sbatch/sinfo on PATH)"
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip()[:200]}"
    states = out.stdout.split()
    if not any(s.startswith(("idle", "mixed", "allocated")) for s in states):
        return f"no usable Slurm node (states: {' '.join(states) or 'none'})"
    return None


@pytest.fixture
def slurm() -> None:
    """Requires the cluster: skipped with the reason outside CI, failed in CI."""
    why = slurm_ready()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm cluster is required in CI: {why}")
        pytest.skip(why)
