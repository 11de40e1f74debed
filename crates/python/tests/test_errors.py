"""Each failure is a benchops exception naming the file, key and reason."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import benchops
from benchops import errors
from conftest import EXAMPLE


def test_the_hierarchy() -> None:
    for cls in (
        errors.IntentError,
        errors.StateError,
        errors.SchedulerError,
        errors.SealError,
        errors.WaitTimeout,
    ):
        assert issubclass(cls, benchops.BenchopsError)
    assert issubclass(errors.WaitTimeout, TimeoutError)
    assert benchops.IntentError is errors.IntentError


def test_toml_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('schema = "benchmark-intent/v1"\nname = \n')
    with pytest.raises(benchops.IntentError) as e:
        benchops.plan(bad)
    assert e.value.file == str(bad)
    assert str(bad) in str(e.value) and "not valid TOML" in e.value.message
    assert e.value.key is None


def test_an_invalid_intent_names_every_key(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("repetitions = 5", 'repetitions = "five"')
    bad = tmp_path / "bench.toml"
    bad.write_text(text)
    with pytest.raises(benchops.IntentError) as e:
        benchops.submit(bad, state=tmp_path / "state")
    assert e.value.file == str(bad)
    assert e.value.key == "$.repetitions"
    assert [k for k, _ in e.value.issues] == ["$.repetitions"]
    # Nothing was planned or submitted.
    assert benchops.list(state=tmp_path / "state") == []
    with pytest.raises(benchops.IntentError) as d:
        benchops.plan({"schema": "benchmark-intent/v1", "name": "x", "command": ["true"],
                       "repetitions": 0})  # fmt: skip
    assert d.value.file == "<dict>" and d.value.key == "$.repetitions"


def test_a_missing_intent_file(tmp_path: Path) -> None:
    with pytest.raises(benchops.IntentError) as e:
        benchops.plan(tmp_path / "nowhere.toml")
    assert e.value.file == str(tmp_path / "nowhere.toml")
    assert "failed to read intent" in e.value.message


def test_a_dict_that_is_not_json() -> None:
    with pytest.raises(benchops.IntentError, match="not a JSON data model"):
        benchops.plan({"schema": "benchmark-intent/v1", "repetitions": float("nan")})
    with pytest.raises(TypeError):
        benchops.plan(42)  # type: ignore[arg-type]


def test_an_unknown_digest_is_a_state_error(tmp_path: Path) -> None:
    with pytest.raises(benchops.StateError, match="no benchmark deadbeefdeadbeef"):
        benchops.Benchmark.open("deadbeefdeadbeef", state=tmp_path)
    with pytest.raises(benchops.StateError):
        benchops.Benchmark.open("sha256:" + "0" * 64, state=tmp_path)
    with pytest.raises(benchops.StateError, match="no lane execution"):
        benchops.Lane.open("0123456789abcdef", state=tmp_path)


def _fake_sbatch(dir: Path, script: str) -> None:
    for tool in ("sbatch", "squeue", "sacct", "scontrol", "scancel"):
        p = dir / tool
        p.write_text(script)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)


def test_a_scheduler_that_refuses_is_a_scheduler_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    _fake_sbatch(tools, "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(benchops.SchedulerError) as e:
        benchops.submit(EXAMPLE, backend="slurm", state=tmp_path / "state",
                        partition="nope")  # fmt: skip
    assert "Invalid partition name" in e.value.message


def test_no_scheduler_at_all_is_a_scheduler_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("BENCHOPS_EXEC", "/nonexistent/benchops-exec")
    with pytest.raises(benchops.SchedulerError, match="is Slurm installed"):
        benchops.submit(EXAMPLE, backend="slurm", state=tmp_path / "state")


def test_bad_arguments_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend must be"):
        benchops.submit(EXAMPLE, backend="kubernetes", state=tmp_path)
    with pytest.raises(ValueError, match="scheduler_timeout"):
        benchops.submit(EXAMPLE, state=tmp_path, scheduler_timeout=0)


def test_seal_errors(tmp_path: Path) -> None:
    b = benchops.submit(EXAMPLE, state=tmp_path / "state", slots=2)
    b.wait(timeout=120)
    with pytest.raises(benchops.SealError) as e:
        b.seal(manifest=EXAMPLE.parent / "schedule.toml", lane="bad lane!",
               slot="2026-11-29T23:00:00Z", repository="example/widgets",
               commit="3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
               out=tmp_path / "sealed")  # fmt: skip
    assert e.value.key == "lane"
    key = tmp_path / "missing-key"
    with pytest.raises(benchops.SealError) as k:
        b.seal(manifest=EXAMPLE.parent / "schedule.toml", lane="comprehensive",
               slot="2026-11-29T23:00:00Z", repository="example/widgets",
               commit="3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
               out=tmp_path / "sealed", sign_key=key)  # fmt: skip
    assert k.value.file == str(key)
    sealed = b.seal(manifest=EXAMPLE.parent / "schedule.toml", lane="comprehensive",
                    slot="2026-11-29T23:00:00Z", repository="example/widgets",
                    commit="3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
                    out=tmp_path / "sealed")  # fmt: skip
    assert sealed.created and Path(sealed.path).is_file()
    assert sealed.digest == "sha256:" + Path(sealed.path).stem
    again = b.seal(manifest=EXAMPLE.parent / "schedule.toml", lane="comprehensive",
                   slot="2026-11-29T23:00:00Z", repository="example/widgets",
                   commit="3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
                   out=tmp_path / "sealed")  # fmt: skip
    assert again.digest == sealed.digest and not again.created


def test_wait_times_out_and_the_children_go_on(tmp_path: Path) -> None:
    intent = tmp_path / "slow.toml"
    intent.write_text('schema = "benchmark-intent/v1"\nname = "slow"\n'
                      'command = ["sleep", "30"]\nrepetitions = 1\n')  # fmt: skip
    b = benchops.submit(intent, state=tmp_path / "state")
    with pytest.raises(benchops.WaitTimeout, match="goes on running"):
        b.wait(timeout=0.3, poll=0.05)
    assert not b.refresh().terminal
    b.cancel()
    assert b.wait(timeout=30, poll=0.1).terminal
