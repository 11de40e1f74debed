"""The package and the CLI give the same answers, byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import benchops
from conftest import EXAMPLE, run_cli


def test_plan_digests_equal_the_cli(tmp_path: Path) -> None:
    out = run_cli(tmp_path / "state", "bench", "plan", str(EXAMPLE), "--json")
    assert out.returncode == 0, out.stderr
    p = benchops.plan(str(EXAMPLE))
    assert p.to_json().encode() + b"\n" == out.stdout
    cli = json.loads(out.stdout)
    assert p.benchmark == cli["benchmark"]
    assert p.children == cli["children"]
    assert len(p.children) == p.child_count == 12
    assert p.cases == ["shloop/n=2000", "shloop/n=20000"]
    # plan() alone writes nothing; with a state it persists the record the
    # CLI's plan persists, under the same digest.
    assert not (tmp_path / "py").exists()
    persisted = benchops.plan(EXAMPLE, state=tmp_path / "py")
    assert persisted.to_json() == p.to_json()
    listed = benchops.list(state=tmp_path / "py")
    assert [(x.benchmark, x.intent_source, x.child_count) for x in listed] == [
        (p.benchmark, "bench.toml", 12)
    ]


def test_every_intent_form_plans_the_same_children() -> None:
    text = EXAMPLE.read_text()
    from_file = benchops.plan(EXAMPLE)
    from_text = benchops.plan(text)
    assert from_text.intent_source == "<string>"
    assert (from_text.benchmark, from_text.children) == (
        from_file.benchmark,
        from_file.children,
    )
    if sys.version_info < (3, 11):
        pytest.skip("tomllib (to build the dict form) needs Python 3.11")
    import tomllib

    from_dict = benchops.plan(tomllib.loads(text))
    assert from_dict.intent_source == "<dict>"
    assert (from_dict.benchmark, from_dict.children) == (
        from_file.benchmark,
        from_file.children,
    )


def test_refresh_and_analyze_json_equal_the_cli(tmp_path: Path) -> None:
    state = tmp_path / "state"
    b = benchops.submit(EXAMPLE, state=state, slots=2)
    assert b.children == 12 and b.attempt == 1
    final = b.wait(timeout=120)
    assert final.terminal and final.counts["succeeded"] == 12

    cli_refresh = run_cli(state, "bench", "refresh", b.digest)
    assert cli_refresh.returncode == 0, cli_refresh.stderr
    assert b.refresh().to_json().encode() + b"\n" == cli_refresh.stdout

    cli_analysis = run_cli(state, "bench", "analyze", b.digest, "--format", "json")
    assert cli_analysis.returncode == 0, cli_analysis.stderr
    analysis = b.analyze()
    assert analysis.to_json().encode() + b"\n" == cli_analysis.stdout
    assert analysis.to_dict() == json.loads(cli_analysis.stdout)
    assert analysis.runs["succeeded"] == 10 and analysis.warmup_runs["total"] == 2
    assert [c["case"] for c in analysis.cases] == ["shloop/n=2000", "shloop/n=20000"]

    # The CLI's status of the Python-submitted benchmark, and the reverse:
    # a CLI-submitted benchmark opened from Python by a digest prefix.
    cli_state = tmp_path / "cli"
    sub = run_cli(cli_state, "bench", "run", str(EXAMPLE), "--format", "json")
    assert sub.returncode == 0, sub.stderr
    digest = json.loads(sub.stdout)["benchmark"]
    reopened = benchops.Benchmark.open(digest[7:19], state=cli_state)
    assert reopened.digest == digest
    assert reopened.analyze().to_json().encode() + b"\n" == sub.stdout


def test_lane_status_json_equals_the_cli(tmp_path: Path) -> None:
    import subprocess

    history = tmp_path / "history.git"
    subprocess.run(["git", "init", "-q", "--bare", str(history)], check=True)
    state = tmp_path / "state"
    manifest = EXAMPLE.parent / "lane" / "schedule.toml"
    lane = benchops.lane_run(
        manifest,
        "sentinel",
        str(history),
        tmp_path / "sealed",
        state=state,
        subject=manifest.parent / "subject",
        commit="3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
        slot="2026-11-30T01:00:00Z",
        slots=2,
    )
    assert lane.started is not None and lane.started.phase == "measuring"
    seen: list[str] = []
    done = benchops.Lane.open(lane.id[:12], state=state).wait(
        timeout=120, progress=lambda s: seen.append(s.phase)
    )
    assert done.phase == "sealed"
    assert done.sealed_record is not None and done.sealed_digest is not None
    sealed_file = tmp_path / "sealed" / (done.sealed_digest[7:] + ".json")
    assert sealed_file.read_text() == done.sealed_record
    record = done.record()
    assert record is not None
    assert [c["id"] for c in record["cases"]] == ["widgets/size=small"]
    assert done.verdicts() == []
    reason = done.no_baseline_reason()
    assert reason is not None and "first run" in reason
    assert "measuring" in seen
    cli_status = run_cli(state, "lane", "status", lane.id, "--json")
    assert cli_status.returncode == 0, cli_status.stderr
    assert lane.status().to_json().encode() + b"\n" == cli_status.stdout
    # Advancing a sealed execution is idempotent.
    assert lane.advance().phase == "sealed"


def test_failures_are_the_cases_bench_run_names_before_it_exits_1(tmp_path: Path) -> None:
    # examples/fail.toml: its case code=3 always fails, code=0 never does.
    intent = EXAMPLE.parent / "fail.toml"
    state = tmp_path / "state"
    b = benchops.submit(intent, state=state, slots=2)
    b.wait(timeout=120)
    failures = b.failures()
    assert [f["case"] for f in failures] == ["fail/code=3"]
    assert (failures[0]["failed"], failures[0]["total"]) == (2, 2)
    assert failures[0]["first"].startswith("failed: ")
    assert failures[0]["stderr"] == ["exiting 3"]

    cli = run_cli(state, "bench", "run", str(intent), "--format", "json")
    assert cli.returncode == 1, cli.stderr
    text = cli.stderr.decode()
    assert "fail/code=3: 2 of 2 run(s) did not succeed; first: failed" in text
    assert "| exiting 3" in text
