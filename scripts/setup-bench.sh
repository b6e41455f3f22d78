#!/usr/bin/env bash
# Makes sure what `npm run compat -- --bench` needs beyond `npm test` is present (idempotent):
#   1. Debian libnetfilter-queue-dev (+ its runtime lib), gcc, iproute2, iptables - for the delay
#      line of the KAFKA-200 benchmark (compat/bench/delay-line/);
#   2. the delay-line program itself, compiled to dist/compat/bench/delay-line/delay-line.
# Silent when everything is already present; one line per step on stderr otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/compat/bench/delay-line/delay-line.c"
OUT_DIR="$ROOT/dist/compat/bench/delay-line"
OUT="$OUT_DIR/delay-line"

log() { echo "setup-bench: $*" >&2; }
die() { echo "setup-bench: ERROR: $*" >&2; exit 1; }

need_pkgs=()
dpkg -s libnetfilter-queue-dev >/dev/null 2>&1 || need_pkgs+=(libnetfilter-queue-dev)
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc)
command -v pkg-config >/dev/null 2>&1 || need_pkgs+=(pkg-config)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null || die "apt-get not found; install ${need_pkgs[*]} by hand"
  [ "$(id -u)" = 0 ] || die "need root to install ${need_pkgs[*]}"
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null 2>&1 || true
    apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" >/dev/null || die "apt-get install ${need_pkgs[*]} failed"
  }
fi

if [ ! -x "$OUT" ] || [ "$SRC" -nt "$OUT" ]; then
  log "compiling $SRC"
  mkdir -p "$OUT_DIR"
  # shellcheck disable=SC2046
  gcc -O2 -Wall -Wextra -o "$OUT" "$SRC" $(pkg-config --cflags --libs libnetfilter_queue) || die "delay-line did not compile"
fi
