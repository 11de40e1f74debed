#!/bin/sh
# The demo subject's workload. Its cost per size comes from speed.conf, so a
# commit that changes speed.conf changes what the benchmark measures. The
# work is a timed wait, and the script reports how long it took as the
# metric `work_s` (a JSON metric line), so the demo behaves the same on a
# busy machine.
set -eu
. ./speed.conf
case "$1" in
  small) ms=$SMALL_MS ;;
  large) ms=$LARGE_MS ;;
  *) echo "unknown size $1" >&2; exit 2 ;;
esac
start=$(date +%s%N)
sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
end=$(date +%s%N)
ns=$((end - start))
printf '{"metric": "work_s", "value": %d.%09d, "unit": "s"}\n' $((ns / 1000000000)) $((ns % 1000000000))
