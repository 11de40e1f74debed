#!/usr/bin/env bash
# test-deps.sh: install what the tests and benchmarks need beyond Rust and Slurm
# (scripts/slurm-up.sh does Slurm), on Debian 12 as root:
#
#   chromium + fonts-liberation   the browser test (tests/browser), run headless
#   wrk, openssl                  cargo xtask bench-webhooks
#   nodejs, npm                   only when `node` / `npm` are missing
#   node_modules                  `npm ci` in tests/browser and xtask/bench-webhooks
#
# Idempotent, and quick when everything is present: apt-get (and its update) runs
# only for missing commands, and `npm ci` only where node_modules is missing or
# older than package-lock.json. Debian 12's Node.js is 18; the pinned packages run
# on it (playwright-core 1.61 is the newest release that does). Not root: uses sudo
# for apt-get when it is available.
#
#   scripts/test-deps.sh [--check]
#
# --check also starts Chromium headless once (a screenshot of about:blank) and
# fails when it does not run.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test-deps: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

check=0
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    *) die "usage: scripts/test-deps.sh [--check]" ;;
esac

# command -> Debian package
declare -A PKG=([chromium]=chromium [wrk]=wrk [openssl]=openssl [node]=nodejs [npm]=npm)
missing=()
for cmd in chromium wrk openssl node npm; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG[$cmd]}")
done
if ((${#missing[@]})); then
    # Fonts, so that pages render text; the rest of Chromium's recommends
    # (printing, power, notification daemons) is not needed headless.
    [[ " ${missing[*]} " == *" chromium "* ]] && missing+=(fonts-liberation)
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
        sudo=(sudo)
    fi
    apt_log=$(mktemp /tmp/benchops-test-deps-apt.XXXXXX)
    log "installing ${missing[*]} (log: $apt_log)"
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" update -qq >"$apt_log" 2>&1 || { tail -n 20 "$apt_log" >&2; die "apt-get update failed"; }
    "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >>"$apt_log" 2>&1 \
        || { tail -n 20 "$apt_log" >&2; die "apt-get install failed"; }
    for cmd in chromium wrk openssl node npm; do
        command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after apt-get install"
    done
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 18)) || die "Node.js $(node --version) is too old; the tests need 18 or later"

for dir in tests/browser xtask/bench-webhooks; do
    [[ -f $dir/package-lock.json ]] || die "$dir/package-lock.json is missing"
    stamp=$dir/node_modules/.package-lock.json
    if [[ ! -f $stamp || $dir/package-lock.json -nt $stamp ]]; then
        log "npm ci in $dir"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in $dir"
    fi
done

if ((check)); then
    profile=$(mktemp -d /tmp/benchops-chromium.XXXXXX)
    shot=$profile/blank.png
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile/profile" --screenshot="$shot" about:blank \
        >"$profile/chromium.log" 2>&1 || true
    if [[ ! -s $shot ]]; then
        tail -n 20 "$profile/chromium.log" >&2
        rm -rf "$profile"
        die "Chromium did not run headless"
    fi
    rm -rf "$profile"
    log "Chromium runs headless"
fi

log "ready: $(chromium --version 2>/dev/null | head -n 1), node $(node --version), npm $(npm --version), $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2)"
