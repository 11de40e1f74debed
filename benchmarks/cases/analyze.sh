#!/usr/bin/env bash
# Hot path: `benchops-exec bench analyze --format json` of a finished
# benchmark (refresh of every child's files, classification, and a
# bootstrap interval per case and metric). Read-only.
. "$(dirname "$0")/../lib.sh"
fixture base build_base
base=$FIXTURES/base
hot "$EXEC" --state "$base/state" bench analyze "$(cat "$base/digest")" --format json
metric input_items $((BASE_PARTS * BASE_REPS)) count
metric input_bytes "$(find "$base/state/benchmarks" -name '*.json' -exec cat {} + | wc -c)" bytes
