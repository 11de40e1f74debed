"""The console script, the optional pandas extra and the objects' shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import benchops
from conftest import EXAMPLE, cli, python


def test_the_console_script_is_the_cli(tmp_path: Path) -> None:
    exe = benchops.exe()
    assert Path(exe).name == "benchops-exec"
    help = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    assert "Holds no GitHub credentials" in help.stdout
    rust = subprocess.run([cli(), "--help"], capture_output=True, text=True, check=True)
    assert help.stdout == rust.stdout
    out = subprocess.run(
        [exe, "--state", str(tmp_path), "bench", "plan", str(EXAMPLE), "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout)["benchmark"] == benchops.plan(EXAMPLE).benchmark
    bad = subprocess.run([exe, "bench", "frobnicate"], capture_output=True, text=True)
    assert bad.returncode == 2 and "frobnicate" in bad.stderr


def test_to_pandas(tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas", reason="the pandas extra is not installed")
    b = benchops.submit(EXAMPLE, state=tmp_path, slots=2)
    b.wait(timeout=120)
    a = b.analyze()
    df = a.to_pandas()
    assert isinstance(df, pandas.DataFrame)
    assert list(df["case"].unique()) == ["shloop/n=2000", "shloop/n=20000"]
    assert set(df["metric"]) >= {"wall_s", "loop_ns_per_iter"}
    assert (df["n"] == 5).all()
    assert len(df) == len(a.rows())


def test_to_pandas_without_pandas_says_how_to_get_it() -> None:
    code = """
import sys
sys.modules["pandas"] = None
import benchops, json
a = benchops.Analysis._from(json.dumps({"benchmark": "x", "complete": True, "note": None,
    "runs": {}, "warmup_runs": {}, "failure_reasons": {}, "cases": []}))
try:
    a.to_pandas()
except ImportError as e:
    print(e)
"""
    p = python(code)
    assert p.returncode == 0, p.stderr
    assert "pip install 'benchops[pandas]'" in p.stdout


def test_null_is_not_zero_in_rows() -> None:
    text = json.dumps({
        "benchmark": "x", "complete": False, "note": "2 runs incomplete",
        "runs": {"total": 1}, "warmup_runs": {}, "failure_reasons": {},
        "cases": [{"case": "c", "runs": {"succeeded": 0, "total": 1},
                   "metrics": [{"name": "wall_s", "unit": "s",
                                "direction": "lower_is_better", "summary": None}]}],
    })  # fmt: skip
    (row,) = benchops.Analysis._from(text).rows()
    assert row["median"] is None and row["n"] is None and row["succeeded"] == 0


def test_results_are_typed_and_serialisable(tmp_path: Path) -> None:
    b = benchops.submit(EXAMPLE, state=tmp_path, slots=2)
    s = b.wait(timeout=120)
    assert isinstance(s, benchops.Status)
    c = s.children[0]
    assert isinstance(c, benchops.ChildStatus) and isinstance(c.evidence, benchops.Evidence)
    assert c.index == 0 and c.warmup is True and c.run_class == "succeeded"
    assert s.to_dict()["children"][0]["class"] == "succeeded"
    assert "terminal=True" in repr(s)
    listed = benchops.list(state=tmp_path)
    assert listed[0].open(state=tmp_path).digest == b.digest
    assert benchops.__version__ == "0.1.0"
    assert sys.version_info >= (3, 9)


def test_the_sources_parse_as_python_3_9() -> None:
    import ast

    package = Path(benchops.__file__).parent
    sources = sorted(package.glob("*.py")) + sorted(package.glob("*.pyi"))
    assert len(sources) >= 4
    for src in sources:
        ast.parse(src.read_text(), filename=str(src), feature_version=(3, 9))
