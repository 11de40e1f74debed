"""benchops from Python: plan, submit, observe, analyze and seal benchmarks.

The engine is the Rust library behind the ``benchops-exec`` CLI, reached
through the ``benchops._native`` extension module: the same planning, the
same backends (local processes or Slurm job arrays), the same classification
and the same analysis. Every result's ``to_json()`` is the JSON the CLI
prints for the same question (``bench plan --json``, ``bench refresh``,
``bench analyze --format json``, ``lane status --json``), without the final
newline.

Nothing is held in memory between calls: a benchmark lives in its state
directory, so one interpreter can submit and exit and another can refresh
and analyze it later (:meth:`Benchmark.open`).

Example::

    import benchops
    bench = benchops.submit("examples/bench.toml", backend="local", slots=2)
    status = bench.wait()
    print(bench.analyze().to_pandas())
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
import time
from dataclasses import dataclass, field, fields
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ClassVar,
    Dict,
    List,
    Mapping,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from . import _native
from .errors import (
    BenchopsError,
    IntentError,
    SchedulerError,
    SealError,
    StateError,
    WaitTimeout,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__version__: str = _native.__version__

__all__ = [
    "Analysis",
    "Benchmark",
    "BenchopsError",
    "Cancelled",
    "ChildStatus",
    "Evidence",
    "IntentError",
    "Lane",
    "LaneProgress",
    "LaneStatus",
    "Listed",
    "Plan",
    "SchedulerError",
    "SealError",
    "Sealed",
    "StateError",
    "Status",
    "WaitTimeout",
    "exe",
    "lane_run",
    "list",
    "plan",
    "submit",
]

#: An intent: a path to a TOML file, TOML text, or its data model as a dict.
Intent = Union[str, "os.PathLike[str]", Mapping[str, Any]]
#: A path.
PathArg = Union[str, "os.PathLike[str]"]

#: The state directory the CLI uses by default (``--state``).
DEFAULT_STATE = ".benchops"

_builtin_list = list


def _state(state: Optional[PathArg]) -> str:
    if state is None:
        return os.environ.get("BENCHOPS_STATE", DEFAULT_STATE)
    return os.fspath(state)


def _scheduler_timeout(value: Optional[float]) -> Optional[float]:
    if value is not None:
        return float(value)
    env = os.environ.get("BENCHOPS_SCHEDULER_TIMEOUT")
    return float(env) if env else None


def exe() -> str:
    """The ``benchops-exec`` the backends start as the child wrapper.

    In order: ``$BENCHOPS_EXEC``; the console script this package installed
    beside the running interpreter; ``benchops-exec`` on ``PATH``.
    """
    env = os.environ.get("BENCHOPS_EXEC")
    if env:
        return env
    candidates = [sysconfig.get_path("scripts")]
    try:
        candidates.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:  # pragma: no cover - no user scheme on this platform
        pass
    candidates.append(os.path.dirname(sys.executable))
    for d in candidates:
        p = os.path.join(d, "benchops-exec")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    found = shutil.which("benchops-exec")
    if found:
        return found
    raise BenchopsError(
        "cannot find benchops-exec (the console script this package installs); "
        "reinstall the package, or set BENCHOPS_EXEC to a benchops-exec binary"
    )


def _source(intent: Intent) -> Tuple[str, str, str]:
    """(kind, value, label) of an intent for the native module.

    A path-like is a file. A dict (any mapping) is the intent's data model.
    A string naming an existing file is that file; a string holding ``=``,
    ``[`` or a newline is TOML text; any other string is a file name.
    """
    if isinstance(intent, Mapping):
        try:
            text = json.dumps(intent, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise IntentError(
                f"<dict>: not a JSON data model: {e}", file="<dict>"
            ) from None
        return ("json", text, "<dict>")
    if isinstance(intent, os.PathLike):
        return ("file", os.fspath(intent), "")
    if isinstance(intent, str):
        if os.path.isfile(intent):
            return ("file", intent, "")
        if "\n" in intent or "=" in intent or "[" in intent:
            return ("toml", intent, "<string>")
        return ("file", intent, "")
    raise TypeError(
        f"intent must be a path, TOML text or a dict, not {type(intent).__name__}"
    )


_T = TypeVar("_T", bound="_Json")


class _Json:
    """A result that is the CLI's JSON: ``to_json()`` gives its text."""

    _json: str
    #: Keys the JSON may leave out (read as ``None``); every other field's
    #: key must be there.
    _optional: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def _from(cls: Type[_T], text: str) -> _T:
        """The result whose fields are the JSON's top-level keys."""
        d = json.loads(text)
        names = [f.name for f in fields(cast(Any, cls)) if f.name != "_json"]
        values = {n: d.get(n) if n in cls._optional else d[n] for n in names}
        made: _T = cast(Any, cls)(**values, _json=text)
        return made

    def to_json(self) -> str:
        """The JSON the CLI prints for this result (no final newline)."""
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        """The JSON as plain Python values (a new dict each call)."""
        value: Dict[str, Any] = json.loads(self._json)
        return value


@dataclass(frozen=True)
class Plan(_Json):
    """The ordered children of an intent and their digests.

    Equivalent intents plan the same children in the same order with the
    same digests, whichever form the intent took.
    """

    benchmark: str
    intent_digest: str
    intent_source: str
    child_count: int
    case_count: int
    runs_per_point: int
    cases: List[str]
    children: List[str]
    _json: str = field(repr=False, compare=False)


@dataclass(frozen=True)
class Evidence:
    """The raw evidence that decided a child's class."""

    started: bool
    result: str
    backend: str


@dataclass(frozen=True)
class ChildStatus:
    """One child, classified, with its evidence."""

    index: int
    case: str
    warmup: bool
    attempt: int
    restart: int
    run_class: str
    reason: str
    evidence: Evidence


@dataclass(frozen=True)
class Status(_Json):
    """One refresh of every child of a benchmark (``bench refresh``)."""

    benchmark: str
    cancelled: bool
    counts: Dict[str, int]
    terminal: bool
    children: List[ChildStatus]
    scheduler: Optional[Dict[str, Any]]
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from(cls, text: str) -> "Status":
        d = json.loads(text)
        children = [
            ChildStatus(
                index=c["index"],
                case=c["case"],
                warmup=c["warmup"],
                attempt=c["attempt"],
                restart=c["restart"],
                run_class=c["class"],
                reason=c["reason"],
                evidence=Evidence(**c["evidence"]),
            )
            for c in d["children"]
        ]
        return cls(
            benchmark=d["benchmark"],
            cancelled=d["cancelled"],
            counts=d["counts"],
            terminal=d["terminal"],
            children=children,
            scheduler=d.get("scheduler"),
            _json=text,
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.counts.items() if v)
        return (
            f"Status({self.benchmark[:19]}…, terminal={self.terminal}, {counts})"
        )


@dataclass(frozen=True)
class Analysis(_Json):
    """Per-case aggregates and the class counts (``bench analyze``).

    ``cases`` holds, per case in expansion order, its metrics with their
    samples and summary (median, MAD, min, max, n and the confidence
    interval), the class counts of its runs, and the runs that did not
    succeed. A metric no run measured has ``summary`` null: null is not
    zero.
    """

    benchmark: str
    complete: bool
    note: Optional[str]
    runs: Dict[str, int]
    warmup_runs: Dict[str, int]
    failure_reasons: Dict[str, int]
    cases: List[Dict[str, Any]]
    _json: str = field(repr=False, compare=False)
    _optional: ClassVar[Tuple[str, ...]] = ("note",)

    def rows(self) -> List[Dict[str, Any]]:
        """One row per (case, metric): the summary flattened, nulls kept."""
        out: List[Dict[str, Any]] = []
        for c in self.cases:
            for m in c.get("metrics", []):
                s = m.get("summary") or {}
                ci = s.get("ci") or {}
                out.append(
                    {
                        "case": c["case"],
                        "metric": m["name"],
                        "unit": m.get("unit"),
                        "direction": m.get("direction"),
                        "n": s.get("n"),
                        "median": s.get("median"),
                        "mad": s.get("mad"),
                        "min": s.get("min"),
                        "max": s.get("max"),
                        "ci_low": ci.get("low"),
                        "ci_high": ci.get("high"),
                        "ci_level": ci.get("level"),
                        "succeeded": c["runs"]["succeeded"],
                        "total": c["runs"]["total"],
                    }
                )
        return out

    def to_pandas(self) -> "pandas.DataFrame":
        """:meth:`rows` as a DataFrame (needs the ``pandas`` extra).

        Missing values stay missing (``None``/``NaN``), never zero.
        """
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "Analysis.to_pandas() needs pandas: pip install 'benchops[pandas]'"
            ) from None
        columns = [
            "case", "metric", "unit", "direction", "n", "median", "mad",
            "min", "max", "ci_low", "ci_high", "ci_level", "succeeded", "total",
        ]  # fmt: skip
        frame: "pandas.DataFrame" = pandas.DataFrame(self.rows(), columns=columns)
        return frame


@dataclass(frozen=True)
class Cancelled(_Json):
    """What ``cancel()`` did: the signals sent or the ``scancel`` run."""

    benchmark: str
    actions: List[str]
    _json: str = field(repr=False, compare=False)


@dataclass(frozen=True)
class Sealed(_Json):
    """A sealed record written create-only: its digest, path and signature."""

    digest: str
    path: str
    created: bool
    signature: Optional[str]
    _json: str = field(repr=False, compare=False)


@dataclass(frozen=True)
class Listed:
    """One benchmark of a state directory, or why its record is unreadable."""

    benchmark: str
    intent_source: Optional[str] = None
    child_count: Optional[int] = None
    created_at: Optional[str] = None
    error: Optional[str] = None

    def open(self, state: Optional[PathArg] = None) -> "Benchmark":
        """The benchmark, to refresh or analyze."""
        return Benchmark.open(self.benchmark, state=state)


def plan(intent: Intent, *, state: Optional[PathArg] = None) -> Plan:
    """Plans ``intent``: the ordered children and their digests.

    With ``state``, the benchmark record is also persisted there (as
    ``benchops-exec bench plan`` does); without, nothing is written.
    """
    kind, value, label = _source(intent)
    persist = state is not None
    return Plan._from(
        _native.plan(_state(state), kind, value, label, persist)
    )


def submit(
    intent: Intent,
    backend: str = "local",
    state: Optional[PathArg] = None,
    *,
    slots: int = 1,
    partition: Optional[str] = None,
    account: Optional[str] = None,
    throttle: Optional[int] = None,
    max_array_size: Optional[int] = None,
    scheduler_timeout: Optional[float] = None,
) -> "Benchmark":
    """Plans ``intent`` and launches every child, then returns at once.

    ``backend="local"`` starts ``slots`` detached worker processes, which
    run the children one after another; ``backend="slurm"`` submits job arrays (``partition``,
    ``account``, ``throttle`` and ``max_array_size`` as the CLI's flags).
    The children outlive this interpreter; reopen the benchmark anywhere
    with :meth:`Benchmark.open`.
    """
    kind, value, label = _source(intent)
    st = _state(state)
    text = _native.submit(
        st, kind, value, label, backend, exe(), int(slots), partition, account,
        throttle, max_array_size, _scheduler_timeout(scheduler_timeout),
    )  # fmt: skip
    d = json.loads(text)
    b = Benchmark(d["benchmark"], st, scheduler_timeout=scheduler_timeout)
    b.attempt = d["attempt"]
    b.children = d["children"]
    b.note = d["note"]
    b.poll = d["poll"]
    return b


def list(state: Optional[PathArg] = None) -> List[Listed]:  # noqa: A001
    """Every benchmark in the state directory (``bench list``)."""
    return [Listed(**row) for row in json.loads(_native.list(_state(state)))]


class Benchmark:
    """A submitted benchmark, named by its digest in a state directory.

    Holds no other state: every method reads the state directory and asks
    the backend afresh, as a new ``benchops-exec`` process would.
    """

    digest: str
    state: str
    attempt: Optional[int]
    children: Optional[int]
    note: Optional[str]
    poll: Optional[float]

    def __init__(
        self, digest: str, state: str, *, scheduler_timeout: Optional[float] = None
    ) -> None:
        self.digest = digest
        self.state = state
        self.scheduler_timeout = scheduler_timeout
        self.attempt = None
        self.children = None
        self.note = None
        self.poll = None

    def __repr__(self) -> str:
        return f"Benchmark({self.digest!r}, state={self.state!r})"

    @classmethod
    def open(
        cls,
        digest: str,
        state: Optional[PathArg] = None,
        *,
        scheduler_timeout: Optional[float] = None,
    ) -> "Benchmark":
        """Reopens a benchmark by its digest or a unique hex prefix (≥ 8).

        Raises :class:`StateError` when the state directory has no such
        benchmark.
        """
        st = _state(state)
        return cls(_native.resolve(st, digest), st, scheduler_timeout=scheduler_timeout)

    def _timeout(self) -> Optional[float]:
        return _scheduler_timeout(self.scheduler_timeout)

    def refresh(self) -> Status:
        """Classifies every child from the files and the backend (read-only)."""
        return Status._from(_native.refresh(self.state, self.digest, self._timeout()))

    def analyze(self) -> Analysis:
        """The aggregates per case and the class counts."""
        return Analysis._from(_native.analyze(self.state, self.digest, self._timeout()))

    def failures(self) -> List[Dict[str, Any]]:
        """Each case whose runs did not all succeed, in plan order: ``case``,
        ``failed`` and ``total`` runs, the ``first`` one's class and reason,
        and its first lines of standard error (``stderr``). What ``bench
        run`` prints before it exits 3; empty when every run succeeded."""
        cases: List[Dict[str, Any]] = json.loads(
            _native.failures(self.state, self.digest, self._timeout())
        )
        return cases

    def wait(
        self,
        timeout: Optional[float] = None,
        poll: Optional[float] = None,
        progress: Optional[Callable[[Status], None]] = None,
    ) -> Status:
        """Refreshes until every child is terminal and returns that status.

        ``progress`` sees every refresh. ``poll`` is the pause between
        refreshes in seconds (default: the backend's when this object
        submitted the benchmark, 0.1 s locally and 2 s on Slurm; else 0.5 s).
        On ``timeout`` (seconds, from a monotonic clock) raises
        :class:`WaitTimeout`; the children go on. Ctrl-C raises
        ``KeyboardInterrupt`` within one pause.
        """
        start = time.monotonic()
        pause = poll if poll is not None else (self.poll or 0.5)
        while True:
            status = self.refresh()
            if progress is not None:
                progress(status)
            if status.terminal:
                return status
            if timeout is not None:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    raise WaitTimeout(
                        f"benchmark {self.digest}: not terminal after {timeout} s "
                        f"({status.counts['incomplete']} incomplete); it goes on running"
                    )
                time.sleep(min(pause, left))
            else:
                time.sleep(pause)

    def cancel(self) -> Cancelled:
        """Cancels the latest submission (recorded first, then signalled)."""
        return Cancelled._from(_native.cancel(self.state, self.digest, self._timeout()))

    def seal(
        self,
        *,
        manifest: PathArg,
        lane: str,
        slot: str,
        repository: str,
        commit: str,
        out: PathArg,
        sign_key: Optional[PathArg] = None,
    ) -> Sealed:
        """Seals the runs into a canonical record in ``out`` (``bench seal``).

        With ``sign_key`` (an Ed25519 OpenSSH key file, mode 0600) also
        writes the record's SSH signature beside it.
        """
        return Sealed._from(
            _native.seal(
                self.state, self.digest, lane, slot, repository, commit,
                os.fspath(manifest), os.fspath(out),
                None if sign_key is None else os.fspath(sign_key),
                self._timeout(),
            )
        )  # fmt: skip


@dataclass(frozen=True)
class LaneStatus(_Json):
    """Where a lane execution is (``lane status --json``)."""

    id: str
    phase: str
    lane: str
    slot: str
    stage: List[Dict[str, Any]]
    execution: Dict[str, Any]
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from(cls, text: str) -> "LaneStatus":
        d = json.loads(text)
        e = d["execution"]
        return cls(e["id"], e["phase"], e["lane"], e["slot"], d["stage"], e, text)


@dataclass(frozen=True)
class LaneProgress(_Json):
    """What one ``lane run`` or ``lane advance`` step did.

    ``sealed_record`` is the canonical sealed record's text once sealed;
    ``failures`` then lists each case whose runs did not all succeed (case,
    failed and total runs, the first one's class and reason, its first
    lines of standard error), as ``lane run --json`` prints them.
    """

    id: str
    phase: str
    resumed: bool
    notes: List[str]
    sealed_digest: Optional[str]
    sealed_record: Optional[str]
    execution: Dict[str, Any]
    failures: List[Dict[str, Any]]
    _json: str = field(repr=False, compare=False)

    @classmethod
    def _from(cls, text: str) -> "LaneProgress":
        d = json.loads(text)
        e = d["execution"]
        s = d.get("sealed") or {}
        return cls(
            e["id"], e["phase"], d["resumed"], d["notes"], s.get("digest"),
            s.get("record"), e, d.get("failures", []), text,
        )  # fmt: skip

    @property
    def ok(self) -> bool:
        """Sealed with every child run succeeded: what exit 0 of ``lane run
        --wait`` means. A sealed step with ``failures`` is not ok."""
        return self.phase == "sealed" and not self.failures

    def record(self) -> Optional[Dict[str, Any]]:
        """The sealed record as plain values (``None`` until sealed)."""
        if self.sealed_record is None:
            return None
        value: Dict[str, Any] = json.loads(self.sealed_record)
        return value

    def verdicts(self) -> List[Dict[str, Any]]:
        """The compared keys (case, metric, verdict, reason, confirmation).

        Empty until sealed, and when the lane had no baseline (see
        :meth:`no_baseline_reason`).
        """
        r = self.record() or {}
        keys: List[Dict[str, Any]] = (r.get("comparison") or {}).get("keys", [])
        return keys

    def no_baseline_reason(self) -> Optional[str]:
        """Why nothing was compared, when the lane had no baseline."""
        r = self.record() or {}
        reason: Optional[str] = (r.get("comparison") or {}).get("no_baseline_reason")
        return reason


class Lane:
    """A lane execution: measure, confirm suspects, seal (``lane run``)."""

    id: str
    state: str

    def __init__(
        self, id: str, state: str, *, scheduler_timeout: Optional[float] = None
    ) -> None:
        self.id = id
        self.state = state
        self.scheduler_timeout = scheduler_timeout
        self.started: Optional[LaneProgress] = None

    def __repr__(self) -> str:
        return f"Lane({self.id[:16]!r}, state={self.state!r})"

    @classmethod
    def open(
        cls,
        id: str,
        state: Optional[PathArg] = None,
        *,
        scheduler_timeout: Optional[float] = None,
    ) -> "Lane":
        """Reopens a lane execution by its id or a unique prefix."""
        st = _state(state)
        s = LaneStatus._from(
            _native.lane_status(st, id, _scheduler_timeout(scheduler_timeout))
        )
        return cls(s.id, st, scheduler_timeout=scheduler_timeout)

    def _timeout(self) -> Optional[float]:
        return _scheduler_timeout(self.scheduler_timeout)

    def advance(self) -> LaneProgress:
        """Moves the execution as far as it can go now (idempotent)."""
        return LaneProgress._from(
            _native.lane_advance(self.state, self.id, exe(), self._timeout())
        )

    def status(self) -> LaneStatus:
        """Where the execution is, read-only."""
        return LaneStatus._from(_native.lane_status(self.state, self.id, self._timeout()))

    def wait(
        self,
        timeout: Optional[float] = None,
        poll: float = 0.2,
        progress: Optional[Callable[[LaneStatus], None]] = None,
    ) -> LaneProgress:
        """Advances until sealed and returns the last step (``--wait``)."""
        start = time.monotonic()
        notes: List[str] = []
        while True:
            p = self.advance()
            notes.extend(n for n in p.notes if "not finished yet" not in n)
            if p.phase == "sealed":
                d = json.loads(p.to_json())
                d["notes"] = notes
                return LaneProgress._from(json.dumps(d))
            s = self.status()
            if progress is not None:
                progress(s)
            if timeout is not None and time.monotonic() - start >= timeout:
                raise WaitTimeout(
                    f"lane execution {self.id}: still {p.phase} after {timeout} s"
                )
            time.sleep(poll)


def lane_run(
    manifest: PathArg,
    lane: str,
    history: str,
    out: PathArg,
    *,
    state: Optional[PathArg] = None,
    subject: PathArg = ".",
    backend: str = "local",
    slots: int = 1,
    partition: Optional[str] = None,
    account: Optional[str] = None,
    throttle: Optional[int] = None,
    slot: Optional[str] = None,
    repository: Optional[str] = None,
    commit: Optional[str] = None,
    sign_key: Optional[PathArg] = None,
    scheduler_timeout: Optional[float] = None,
    unscheduled: Optional[str] = None,
) -> Lane:
    """Starts (or resumes) a lane execution and returns at once.

    ``slot`` must be a firing of the lane's cron at or before now (the
    latest one by default); ``unscheduled`` records an ad-hoc run on
    purpose, with its reason.

    Compares each covered case with the lane's baseline read from
    ``history``; :meth:`Lane.advance` or :meth:`Lane.wait` re-runs suspects
    to confirm a drift (or a clear) and seals the record into ``out``.
    Refuses to run with publication credentials in the environment.
    """
    st = _state(state)
    text = _native.lane_run(
        st, os.fspath(manifest), lane, history, os.fspath(out), exe(),
        os.fspath(subject), backend, int(slots), partition, account, throttle,
        slot, repository, commit,
        None if sign_key is None else os.fspath(sign_key),
        _scheduler_timeout(scheduler_timeout), unscheduled,
    )  # fmt: skip
    p = LaneProgress._from(text)
    ln = Lane(p.id, st, scheduler_timeout=scheduler_timeout)
    ln.started = p
    return ln
