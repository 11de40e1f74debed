# Shared by the case scripts in benchmarks/cases/ (sourced, not run).
#
# A case builds its fixture outside the timed region, then runs one hot
# path of benchops once under benchops-exec's own measuring wrapper (a
# nested `bench run` in a fresh state directory), and prints what that
# wrapper measured as JSON metric lines:
#
#   hot_wall_s         wall time of the hot path (the wrapper's monotonic clock)
#   hot_user_s         its user CPU time
#   hot_sys_s          its system CPU time
#   hot_max_rss_bytes  its peak resident set (with the wrapper's floor, see docs/analysis.md)
#   input_items        how many things the hot path read (records, children, ...)
#   input_bytes        how many bytes of input it read, or null with a reason
#
# The case's own builtin wall_s covers everything, setup included; compare
# hot_wall_s.
#
# Environment:
#   SELFBENCH_SCALE    full or quick (set by the intent)
#   SELFBENCH_EXEC     the benchops-exec to measure (default: benchops-exec on PATH)
#   SELFBENCH_PUBLISH  the benchops-publish to measure (default: benchops-publish on PATH)
#   SELFBENCH_SCRATCH  where fixtures and per-run scratch go (default: $TMPDIR or /tmp,
#                      in benchops-selfbench-<uid>); anything in it may be deleted
#                      once the lane run is sealed
#
# Fixtures are built once per lane execution (BENCHOPS_LANE_RUN), so the
# measuring and the confirming stage read the same inputs, and each
# execution builds them with the binaries it measures. Needs bash, coreutils,
# grep, sed, findutils (all essential on Debian) and git only.

set -euo pipefail
shopt -s inherit_errexit

die() {
  printf 'selfbench: %s\n' "$*" >&2
  exit 2
}

: "${SELFBENCH_SCALE:?is not set (the intent sets it: full or quick)}"
EXEC=${SELFBENCH_EXEC:-benchops-exec}
PUBLISH=${SELFBENCH_PUBLISH:-benchops-publish}
SCRATCH=${SELFBENCH_SCRATCH:-${TMPDIR:-/tmp}/benchops-selfbench-$(id -u)}
command -v "$EXEC" >/dev/null || die "benchops-exec not found: set SELFBENCH_EXEC to its path (now: $EXEC)"
command -v "$PUBLISH" >/dev/null || die "benchops-publish not found: set SELFBENCH_PUBLISH to its path (now: $PUBLISH)"
EXEC=$(command -v "$EXEC")
PUBLISH=$(command -v "$PUBLISH")
# The repository's own files (examples/) are read from the subject checkout.
SUBJECT=$(pwd -P)

# The sizes of each scale. Quick is a smoke test of the flow; its figures
# mean little.
# HOT_TIMEOUT bounds one timed hot path; it stays below the case's own
# timeout_s (the intents'), so a hung hot path is stopped by its wrapper
# and reported here rather than left running after the case is killed.
case $SELFBENCH_SCALE in
  full)
    HOT_TIMEOUT=200
    BASE_PARTS=5 BASE_REPS=40          # the finished benchmark: 200 children, 6 metrics each
    RECORDS=240                        # sealed records validated (half v1, half v2)
    PLAN_A=100 PLAN_B=100 PLAN_REPS=10 # 100 x 100 points x (1 warm-up + 10 runs): 110,000 children
    HISTORY=60 HANDOFFS=10             # records already in history, new handoffs swept
    ;;
  quick)
    HOT_TIMEOUT=60
    BASE_PARTS=2 BASE_REPS=4
    RECORDS=6
    PLAN_A=10 PLAN_B=10 PLAN_REPS=10
    HISTORY=3 HANDOFFS=2
    ;;
  *) die "SELFBENCH_SCALE must be full or quick, not '$SELFBENCH_SCALE'" ;;
esac

key=${BENCHOPS_LANE_RUN:-${BENCHOPS_BENCHMARK:-manual}}
key=${key#sha256:}
WORK=$SCRATCH/${key:0:16}-$SELFBENCH_SCALE
FIXTURES=$WORK/fixtures
mkdir -p "$FIXTURES"
# This run's scratch, removed when the case ends.
RUN=$(mktemp -d "$WORK/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT

# A fixed subject for the fixture records; they are inputs, not results.
FIXTURE_COMMIT=0123456789abcdef0123456789abcdef01234567

# fixture NAME BUILDER: makes $FIXTURES/NAME once, by running BUILDER DIR on
# a temporary directory that is then renamed into place (a rename is
# atomic, so a half-built fixture is never used).
fixture() {
  local name=$1 build=$2 final=$FIXTURES/$1 tmp
  [[ -d $final ]] && return 0
  tmp=$(mktemp -d "$FIXTURES/.$name.XXXXXX")
  "$build" "$tmp" >&2
  mv -T "$tmp" "$final" 2>/dev/null || rm -rf "$tmp"
  [[ -d $final ]] || die "fixture $name was not built"
}

# toml_str S: S as a TOML basic string that is also a literal command
# template (braces doubled, see docs/intent.md#placeholders).
toml_str() {
  local s=$1
  [[ $s != *[[:cntrl:]]* ]] || die "an argument holds a control character: $s"
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//\{/\{\{}
  s=${s//\}/\}\}}
  printf '"%s"' "$s"
}

# json_runs JSON: the last "runs" object of a canonical analysis (its
# top-level counts), as "succeeded total".
json_runs() {
  grep -o '"runs":{[^}]*}' <<<"$1" | tail -n 1 |
    sed -n 's/.*"succeeded":\([0-9]*\),"total":\([0-9]*\)}/\1 \2/p'
}

# metric NAME VALUE UNIT [REASON]: one JSON metric line (a null VALUE needs a reason).
metric() {
  if [[ $2 == null ]]; then
    printf '{"metric": "%s", "value": null, "unit": "%s", "reason": "%s"}\n' "$1" "$3" "$4"
  else
    printf '{"metric": "%s", "value": %s, "unit": "%s"}\n' "$1" "$2" "$3"
  fi
}

# hot CMD...: runs CMD once under benchops-exec's wrapper, in a fresh state
# directory, and prints the wrapper's measurements as the hot_* metrics.
# Fails, with the command's output, when CMD did not succeed.
hot() {
  local dir digest json value name unit a sep=""
  dir=$(mktemp -d "$RUN/hot.XXXXXX")
  {
    printf 'schema = "benchmark-intent/v1"\nname = "hot"\nrepetitions = 1\ntimeout_s = %s\ncommand = [' "$HOT_TIMEOUT"
    for a in "$@"; do
      printf '%s%s' "$sep" "$(toml_str "$a")"
      sep=", "
    done
    printf ']\n'
  } >"$dir/hot.toml"
  digest=$("$EXEC" --state "$dir/state" bench plan "$dir/hot.toml" 2>"$dir/plan.err") ||
    { cat "$dir/plan.err" >&2; die "bench plan of the hot path failed: $*"; }
  "$EXEC" --state "$dir/state" bench run "$dir/hot.toml" >/dev/null 2>"$dir/run.err" ||
    { cat "$dir/run.err" >&2; die "bench run of the hot path failed: $*"; }
  json=$("$EXEC" --state "$dir/state" bench analyze "$digest" --format json)
  if [[ $(json_runs "$json") != "1 1" ]]; then
    find "$dir/state" -name result.json -exec cat {} + >&2 2>/dev/null || true
    die "the hot path did not succeed: $*"
  fi
  for name in wall_s user_s sys_s max_rss_bytes; do
    value=$(sed -n "s/.*\"name\":\"$name\",\"samples\":\[\([^],]*\)\].*/\1/p" <<<"$json")
    [[ -n $value ]] || die "the wrapper measured no $name for: $*"
    unit=s
    [[ $name == max_rss_bytes ]] && unit=bytes
    metric "hot_$name" "$value" "$unit"
  done
}

# slot_at I: the I-th hourly slot from 2025-01-01T00:00:00Z (fixture
# records lie outside every watchdog lookback, so a sweep's work does not
# depend on today's date).
slot_at() {
  date -u -d "@$((1735689600 + $1 * 3600))" +%Y-%m-%dT%H:%M:%SZ
}

# The fixture manifest: the lanes of the fixture records.
write_fixture_manifest() {
  cat >"$1" <<'TOML'
schema = "schedule-manifest/v1"
repository = "example/fixture"

[[lanes]]
name = "fixture"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "comprehensive"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "last-clean"
TOML
}

# base: a finished benchmark with BASE_PARTS cases of BASE_REPS runs, each
# reporting six metrics of its own; what `bench analyze` reads and the
# source of the v1 records.
build_base() {
  local dir=$1 parts
  parts=$(seq -s ', ' 1 "$BASE_PARTS")
  cat >"$dir/child.sh" <<'SH'
i=$BENCHOPS_CHILD_INDEX
for m in alpha beta gamma delta epsilon zeta; do
  i=$(( (i * 7 + 3) % 1009 ))
  printf '{"metric": "%s", "value": %d.%03d, "unit": "ms"}\n' "$m" $((i / 10)) $((i % 10 * 7))
done
SH
  cat >"$dir/base.toml" <<TOML
schema = "benchmark-intent/v1"
name = "fixture"
command = ["sh", $(toml_str "$dir/child.sh")]
repetitions = $BASE_REPS
timeout_s = 60

[metrics]
json_lines = true

[[parameters]]
name = "part"
values = [$parts]
TOML
  write_fixture_manifest "$dir/schedule.toml"
  "$EXEC" --state "$dir/state" bench run "$dir/base.toml" --slots 2 >/dev/null
  "$EXEC" --state "$dir/state" bench plan "$dir/base.toml" 2>"$dir/plan.err" >"$dir/digest" ||
    { cat "$dir/plan.err" >&2; die "bench plan of the base benchmark failed"; }
  local json
  json=$("$EXEC" --state "$dir/state" bench analyze "$(cat "$dir/digest")" --format json)
  local want=$((BASE_PARTS * BASE_REPS))
  [[ $(json_runs "$json") == "$want $want" ]] || die "the base benchmark did not finish with $want successes"
}

# records: RECORDS sealed records, in slot order (order.txt): even ones are
# v1 records of the base benchmark (bench seal), odd ones v2 lane records
# (examples/result-v2.draft.json), each with its own slot.
build_records() {
  local dir=$1 base=$FIXTURES/base v1 v2 i slot prev out
  "$EXEC" --state "$base/state" bench seal "$(cat "$base/digest")" --manifest "$base/schedule.toml" \
    --lane fixture --slot "$(slot_at 0)" --repository example/fixture \
    --commit "$FIXTURE_COMMIT" --out "$dir/t1" >/dev/null
  "$EXEC" seal "$SUBJECT/examples/result-v2.draft.json" --out "$dir/t2" >/dev/null
  v1=$(cat "$dir"/t1/*.json)
  v2=$(cat "$dir"/t2/*.json)
  mkdir -p "$dir/records" "$dir/drafts"
  for ((i = 0; i < RECORDS; i++)); do
    slot=$(slot_at $((i + 1)))
    if ((i % 2 == 0)); then
      sed "s/\"slot\":\"[^\"]*\"/\"slot\":\"$slot\"/" <<<"$v1" >"$dir/drafts/$i.json"
    else
      prev=$(slot_at "$i")
      sed -e "s/\"baseline\":{\([^}]*\)\"slot\":\"[^\"]*\"}/\"baseline\":{\1\"slot\":\"$prev\"}/" \
        -e "s/\"schema\":\"benchmark-result\/v2\",\"slot\":\"[^\"]*\"/\"schema\":\"benchmark-result\/v2\",\"slot\":\"$slot\"/" \
        <<<"$v2" >"$dir/drafts/$i.json"
    fi
    out=$("$EXEC" seal "$dir/drafts/$i.json" --out "$dir/records")
    printf '%s\n' "${out##*/}" >>"$dir/order.txt"
  done
  rm -rf "$dir/t1" "$dir/t2" "$dir/drafts"
  [[ $(sort -u "$dir/order.txt" | wc -l) == "$RECORDS" ]] || die "the fixture records are not $RECORDS distinct records"
}

# sweep: a sweep directory whose history holds the first HISTORY records
# (one sweep made it) and whose sealed/ holds the next HANDOFFS, to be
# swept; each timed run sweeps a copy.
build_sweep() {
  local dir=$1 rec=$FIXTURES/records f
  mkdir -p "$dir/template/sealed"
  write_fixture_manifest "$dir/schedule.toml"
  # (sed -n, not head: a reader that stops early would kill its writer
  # with SIGPIPE.)
  sed -n "1,${HISTORY}p" "$rec/order.txt" | while read -r f; do cp "$rec/records/$f" "$dir/template/sealed/"; done
  "$PUBLISH" sweep --local "$dir/template" --manifest "$dir/schedule.toml" >/dev/null
  rm -rf "$dir/template/sealed/.persisted"
  sed -n "$((HISTORY + 1)),$((HISTORY + HANDOFFS))p" "$rec/order.txt" |
    while read -r f; do cp "$rec/records/$f" "$dir/template/sealed/"; done
  [[ $(find "$dir/template/sealed" -maxdepth 1 -name '*.json' | wc -l) == "$HANDOFFS" ]] ||
    die "the sweep fixture needs $HANDOFFS handoffs; raise RECORDS"
  git --git-dir "$dir/template/history.git" rev-list --count benchmark-history >"$dir/commits"
}

# plan: an intent of PLAN_A x PLAN_B points and PLAN_REPS runs each.
build_plan() {
  local dir=$1
  cat >"$dir/plan.toml" <<TOML
schema = "benchmark-intent/v1"
name = "plan"
command = ["prog", "--a={a}", "--b={b}", "--mode", "{mode}"]
repetitions = $PLAN_REPS
warmup = 1
timeout_s = 60

[env]
RUST_LOG = "warn"

[[parameters]]
name = "a"
values = [$(seq -s ', ' 1 "$PLAN_A")]

[[parameters]]
name = "b"
values = [$(seq -f '"b%g"' -s ', ' 1 "$PLAN_B")]

[[parameters]]
name = "mode"
values = ["fast"]
TOML
  echo $((PLAN_A * PLAN_B * (PLAN_REPS + 1))) >"$dir/children"
}
