"""submitit's ``map_array`` of N trivial jobs, for an N over the cluster's
``MaxArraySize``: what a submitit user gets where benchops splits the work
into several arrays. Run by ``cargo xtask bench-slurm`` only when N is over
the limit, so no job is expected to start; one that does is cancelled at
once.

    python submitit_over_limit.py FOLDER N

Prints one JSON line: ``{"submitted": bool, "seconds": float, "error": str}``
(the error's last line, at most 300 characters).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import submitit


def job(i: int) -> int:
    return i


def main() -> None:
    folder, n = sys.argv[1], int(sys.argv[2])
    ex = submitit.SlurmExecutor(folder=folder)
    ex.update_parameters(time=5, array_parallelism=n)
    start = time.monotonic()
    try:
        jobs = ex.map_array(job, range(n))
    except Exception as e:  # submitit raises its own errors and sbatch's
        lines = [x for x in str(e).strip().splitlines() if x.strip()] or [type(e).__name__]
        print(json.dumps({"submitted": False, "seconds": time.monotonic() - start,
                          "error": lines[-1][:300]}))
        return
    took = time.monotonic() - start
    subprocess.run(["scancel", jobs[0].job_id.split("_")[0]], capture_output=True)
    print(json.dumps({"submitted": True, "seconds": took, "error": ""}))


if __name__ == "__main__":
    main()
