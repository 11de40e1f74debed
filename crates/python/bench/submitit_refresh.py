"""One fresh-process look at every task of a Slurm array, as submitit
looks: a ``SlurmJob`` per task (as ``map_array`` returns them), then each
task's ``state``, which submitit's shared watcher answers with one ``sacct``
call for the whole array.

Run by ``cargo xtask bench-slurm`` against the array benchops submitted, so
both tools observe the same finished tasks. Prints the state counts and the
number of ``sacct`` calls as JSON.

    python submitit_refresh.py FOLDER ARRAY_JOB_ID:TASKS...
"""

from __future__ import annotations

import collections
import json
import sys

import submitit


def main() -> None:
    folder = sys.argv[1]
    jobs = []
    for arg in sys.argv[2:]:
        array, tasks = arg.split(":")
        jobs += [submitit.SlurmJob(folder=folder, job_id=f"{array}_{k}") for k in range(int(tasks))]
    states = collections.Counter(job.state for job in jobs)
    print(json.dumps({"states": dict(states), "sacct_calls": jobs[0].watcher.num_calls}))


if __name__ == "__main__":
    main()
