"""Submitting N trivial Slurm jobs from a fresh Python process: benchops
against submitit's ``map_array``, alternating in the same run.

Each sample is a whole new interpreter (start, imports, planning or
pickling, the ``sbatch`` calls) timed from outside on one monotonic clock.
Every array is cancelled right after its sample, untimed, so the cluster
stays idle and one side's jobs never load the other's sample. Prints the
medians and their ratio (submitit / benchops).

Run by ``cargo xtask bench-python [CHILDREN]`` in an environment with the
benchops wheel and submitit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import List, Tuple

BENCHOPS = """
import sys, benchops
b = benchops.submit(sys.argv[1], backend="slurm", state=sys.argv[2])
print(b.digest)
"""

SUBMITIT = """
import sys, submitit
def job(i):
    return i
ex = submitit.SlurmExecutor(folder=sys.argv[1])
ex.update_parameters(time=5, array_parallelism=int(sys.argv[2]))
jobs = ex.map_array(job, range(int(sys.argv[2])))
print(jobs[0].job_id.split("_")[0])
"""


def timed(args: List[str]) -> Tuple[float, str]:
    start = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - start
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(args[:3])}…\n{out.stderr[-2000:]}")
    return took, out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    n = a.children
    os.makedirs(a.scratch, exist_ok=True)
    intent = os.path.join(a.scratch, "trivial.toml")
    with open(intent, "w") as f:
        f.write(
            'schema = "benchmark-intent/v1"\nname = "trivial"\n'
            f'command = ["true"]\nrepetitions = {n}\n'
        )
    state = os.path.join(a.scratch, "state")
    py = sys.executable
    bench: List[float] = []
    peer: List[float] = []
    for r in range(a.rounds):
        t, digest = timed([py, "-c", BENCHOPS, intent, state])
        bench.append(t)
        subprocess.run(
            ["benchops-exec", "--state", state, "bench", "cancel", digest],
            capture_output=True,
        )
        folder = os.path.join(a.scratch, f"submitit-{r}")
        t, job = timed([py, "-c", SUBMITIT, folder, str(n)])
        peer.append(t)
        subprocess.run(["scancel", job], capture_output=True)
        print(f"round {r + 1}: benchops {bench[-1]:.3f} s, submitit {peer[-1]:.3f} s",
              flush=True)  # fmt: skip
    mb, mp = statistics.median(bench), statistics.median(peer)
    result = {
        "children": n,
        "rounds": a.rounds,
        "benchops_median_s": round(mb, 4),
        "benchops_min_s": round(min(bench), 4),
        "submitit_median_s": round(mp, 4),
        "submitit_min_s": round(min(peer), 4),
        "ratio_submitit_over_benchops": round(mp / mb, 2),
    }
    print(json.dumps(result))
    print(
        f"submit {n} trivial jobs from a fresh Python process: benchops median "
        f"{mb:.3f} s, submitit map_array median {mp:.3f} s: benchops is "
        f"{mp / mb:.1f}x faster"
    )


if __name__ == "__main__":
    main()
