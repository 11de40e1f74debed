#!/usr/bin/env bash
# Hot path: `benchops-exec bench plan` of a large grid into a fresh state
# directory (expansion, child digests, the benchmark record written).
. "$(dirname "$0")/../lib.sh"
fixture plan build_plan
state=$RUN/plan-state
hot "$EXEC" --state "$state" bench plan "$FIXTURES/plan/plan.toml"
want=$(cat "$FIXTURES/plan/children")
got=$(cat "$state"/benchmarks/*/children.sha256 | wc -l)
[[ $got == "$want" ]] || die "bench plan stored $got child digests, not $want"
metric input_items "$want" count
metric input_bytes "$(wc -c <"$FIXTURES/plan/plan.toml")" bytes
