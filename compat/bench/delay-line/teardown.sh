#!/usr/bin/env bash
# Undoes setup.sh (idempotent, also after a half-finished setup): stops any process still running
# inside the benchmark's namespaces (by pid: the delay lines, a broker, a consumer), then deletes
# the namespaces, which removes the veth pair and the iptables rules with them.
#
#   teardown.sh [prefix]      prefix defaults to gregor-k200
set -uo pipefail
P="${1:-gregor-k200}"
for ns in "$P-a" "$P-b"; do
  ip netns list | grep -qE "^$ns( |$)" || continue
  pids="$(ip netns pids "$ns" 2>/dev/null || true)"
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
      sleep 0.3
    done
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  fi
  ip netns exec "$ns" iptables -w -F INPUT 2>/dev/null || true
  ip netns delete "$ns" 2>/dev/null || true
done
exit 0
