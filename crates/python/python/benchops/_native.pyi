# Types of the extension module (crates/python/src/lib.rs). Every function
# returns the JSON text the CLI prints for the same question.
from typing import List, Optional

__version__: str

def plan(state: str, kind: str, value: str, label: str, persist: bool) -> str: ...
def submit(
    state: str,
    kind: str,
    value: str,
    label: str,
    backend: str,
    exe: str,
    slots: int,
    partition: Optional[str],
    account: Optional[str],
    throttle: Optional[int],
    max_array_size: Optional[int],
    scheduler_timeout: Optional[float],
) -> str: ...
def resolve(state: str, benchmark: str) -> str: ...
def refresh(state: str, benchmark: str, scheduler_timeout: Optional[float]) -> str: ...
def analyze(state: str, benchmark: str, scheduler_timeout: Optional[float]) -> str: ...
def failures(state: str, benchmark: str, scheduler_timeout: Optional[float]) -> str: ...
def cancel(state: str, benchmark: str, scheduler_timeout: Optional[float]) -> str: ...
def list(state: str) -> str: ...
def seal(
    state: str,
    benchmark: str,
    lane: str,
    slot: str,
    repository: str,
    commit: str,
    manifest: str,
    out: str,
    sign_key: Optional[str],
    scheduler_timeout: Optional[float],
) -> str: ...
def lane_run(
    state: str,
    manifest: str,
    lane: str,
    history: str,
    out: str,
    exe: str,
    subject: str,
    backend: str,
    slots: int,
    partition: Optional[str],
    account: Optional[str],
    throttle: Optional[int],
    slot: Optional[str],
    repository: Optional[str],
    commit: Optional[str],
    sign_key: Optional[str],
    scheduler_timeout: Optional[float],
    unscheduled: Optional[str] = None,
) -> str: ...
def lane_advance(state: str, id: str, exe: str, scheduler_timeout: Optional[float]) -> str: ...
def lane_status(state: str, id: str, scheduler_timeout: Optional[float]) -> str: ...
def lane_list(state: str) -> str: ...
def cli_main(argv: List[str]) -> int: ...
