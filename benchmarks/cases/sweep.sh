#!/usr/bin/env bash
# Hot path: `benchops-publish sweep --local` of new handoffs into a local
# history that already holds records (validate, persist one commit,
# reconcile drift issues in the ledger, health and watchdog). Each run
# sweeps its own copy of the fixture, made before the timed region.
. "$(dirname "$0")/../lib.sh"
fixture base build_base
fixture records build_records
fixture sweep build_sweep
fix=$FIXTURES/sweep
cp -a "$fix/template" "$RUN/sweep"
hot "$PUBLISH" sweep --local "$RUN/sweep" --manifest "$fix/schedule.toml"
want=$(($(cat "$fix/commits") + 1))
got=$(git --git-dir "$RUN/sweep/history.git" rev-list --count benchmark-history)
[[ $got == "$want" ]] || die "the sweep left $got commits on benchmark-history, not $want"
left=$(find "$RUN/sweep/sealed" -maxdepth 1 -name '*.json' | wc -l)
[[ $left == 0 ]] || die "the sweep left $left handoffs in sealed/"
metric input_items "$HANDOFFS" count
metric input_bytes "$(find "$fix/template/sealed" -maxdepth 1 -name '*.json' -exec cat {} + | wc -c)" bytes
