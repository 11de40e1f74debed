#!/bin/sh
# The demo subject's workload. Its cost per size comes from speed.conf, so a
# commit that changes speed.conf changes what the benchmark measures. The
# work is a timed wait, so the demo behaves the same on a busy machine.
set -eu
. ./speed.conf
case "$1" in
  small) ms=$SMALL_MS ;;
  large) ms=$LARGE_MS ;;
  *) echo "unknown size $1" >&2; exit 2 ;;
esac
sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
