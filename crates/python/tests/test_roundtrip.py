"""One interpreter submits and exits; another refreshes and analyzes.

Locally, every class appears: the second interpreter also plays the
failures a long-lived benchmark meets (a truncated result, a lost run
directory, a wrapper that hangs past the limit) on the real files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import json_out, python

CLASSES = """
schema = "benchmark-intent/v1"
name = "classes"
command = ["sh", "-c", "case {mode} in ok) exit 0;; fail) echo boom >&2; exit 3;; slow) exec sleep 120;; esac"]
repetitions = 3
timeout_s = 200

[[parameters]]
name = "mode"
values = ["ok", "fail", "slow"]
"""

SUBMIT = """
import sys, benchops
b = benchops.submit(sys.argv[1], backend=sys.argv[3], state=sys.argv[2], slots=9)
print('{"digest": "%s", "children": %d}' % (b.digest, b.children))
"""

OBSERVE = r"""
import json, os, sys, time, benchops
state, digest = sys.argv[1], sys.argv[2]
b = benchops.Benchmark.open(digest[7:23], state=state)
# Wait until the quick children ended and the slow ones run.
deadline = time.monotonic() + 120
while True:
    s = b.refresh()
    done = [c for c in s.children if c.case != "classes/mode=slow" and c.run_class != "incomplete"]
    slow = [c for c in s.children if c.case == "classes/mode=slow" and c.evidence.started]
    if len(done) == 6 and len(slow) == 3:
        break
    assert time.monotonic() < deadline, s.to_json()
    time.sleep(0.1)
runs = os.path.join(state, "benchmarks", digest[7:], "runs")
ok = [c.index for c in s.children if c.case == "classes/mode=ok"]
slow = [c.index for c in s.children if c.case == "classes/mode=slow"]
# A truncated result, a lost run directory, a wrapper hung for an hour.
path = os.path.join(runs, str(ok[0]), "1", "result.json")
data = open(path, "rb").read()
open(path, "wb").write(data[: len(data) // 2])
import shutil
shutil.rmtree(os.path.join(runs, str(ok[1]), "1"))
started = os.path.join(runs, str(slow[0]), "1", "started.json")
record = json.load(open(started))
record["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
open(started, "w").write(json.dumps(record))
s = b.refresh()
print(json.dumps({c.index: [c.case, c.run_class, c.reason] for c in s.children}))
print(json.dumps(s.counts))
a = b.analyze()
print(json.dumps({"complete": a.complete, "runs": a.runs, "note": a.note}))
print(json.dumps(b.cancel().actions))
final = b.wait(timeout=60, poll=0.1)
print(json.dumps({"terminal": final.terminal, "counts": final.counts}))
"""


def test_fresh_interpreters_round_trip_with_every_class(tmp_path: Path) -> None:
    intent = tmp_path / "classes.toml"
    intent.write_text(CLASSES)
    state = tmp_path / "state"
    (submitted,) = json_out(python(SUBMIT, str(intent), str(state), "local"))
    assert isinstance(submitted, dict) and submitted["children"] == 9
    digest = submitted["digest"]
    by_index, counts, analysis, actions, final = json_out(
        python(OBSERVE, str(state), digest)
    )
    assert isinstance(by_index, dict) and isinstance(counts, dict)
    classes = sorted({v[1] for v in by_index.values()})
    assert classes == sorted(
        [
            "succeeded",
            "failed",
            "incomplete",
            "missing",
            "stale",
            "scheduler-inconsistent",
        ]
    ), by_index
    reasons = {v[1]: v[2] for v in by_index.values()}
    assert "unreadable" in reasons["scheduler-inconsistent"]
    assert "past the 260 s limit" in reasons["stale"]
    assert counts == {
        "total": 9,
        "succeeded": 1,
        "failed": 3,
        "incomplete": 2,
        "missing": 1,
        "stale": 1,
        "scheduler_inconsistent": 1,
    }
    assert isinstance(analysis, dict)
    assert analysis["complete"] is False and analysis["note"]
    assert analysis["runs"]["total"] == 9 and analysis["runs"]["missing"] == 1
    assert isinstance(actions, list) and actions, "cancel signalled nothing"
    assert isinstance(final, dict) and final["terminal"] is True
    assert final["counts"]["incomplete"] == 0


def test_ctrl_c_interrupts_wait_promptly(tmp_path: Path) -> None:
    intent = tmp_path / "slow.toml"
    intent.write_text(
        'schema = "benchmark-intent/v1"\nname = "slow"\n'
        'command = ["sleep", "120"]\nrepetitions = 1\n'
    )
    state = tmp_path / "state"
    code = """
import sys, benchops
b = benchops.submit(sys.argv[1], state=sys.argv[2])
print(b.digest, flush=True)
try:
    b.wait(poll=5)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    b.cancel()
    raise
"""
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(intent), str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    digest = p.stdout.readline().strip()
    assert digest.startswith("sha256:"), p.stderr.read() if p.stderr else ""
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    took = time.monotonic() - sent
    assert "interrupted" in out
    assert "KeyboardInterrupt" in err
    assert p.returncode != 0
    # Within one pause of 5 s (time.sleep wakes for the signal at once).
    assert took < 4.0, f"wait() took {took:.1f} s to see Ctrl-C"


@pytest.mark.usefixtures("slurm")
def test_fresh_interpreters_round_trip_on_slurm(tmp_path: Path) -> None:
    intent = tmp_path / "quick.toml"
    intent.write_text(
        'schema = "benchmark-intent/v1"\nname = "quick"\n'
        'command = ["sh", "-c", "test {mode} = ok"]\nrepetitions = 2\n'
        '[[parameters]]\nname = "mode"\nvalues = ["ok", "fail"]\n'
    )
    # Shared state: the tasks run on the node, in this directory.
    state = tmp_path / "state"
    (submitted,) = json_out(python(SUBMIT, str(intent), str(state), "slurm"))
    assert isinstance(submitted, dict)
    digest = submitted["digest"]
    code = """
import json, sys, benchops
b = benchops.Benchmark.open(sys.argv[2], state=sys.argv[1])
s = b.wait(timeout=240, poll=1)
print(json.dumps(s.counts))
print(json.dumps(sorted({(c.case, c.run_class) for c in s.children})))
print(json.dumps(s.scheduler is not None))
print(b.analyze().to_json())
"""
    counts, classes, has_scheduler, analysis = json_out(
        python(code, str(state), digest, timeout=300)
    )
    assert counts == {
        "total": 4,
        "succeeded": 2,
        "failed": 2,
        "incomplete": 0,
        "missing": 0,
        "stale": 0,
        "scheduler_inconsistent": 0,
    }, counts
    assert classes == [["quick/mode=fail", "failed"], ["quick/mode=ok", "succeeded"]]
    assert has_scheduler is True
    assert isinstance(analysis, dict) and analysis["runs"]["failed"] == 2
    assert os.path.isdir(state / "benchmarks" / digest[7:] / "slurm")
