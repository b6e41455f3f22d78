#!/usr/bin/env bash
# Runs the test suite (or the command given) beside a CPU hog, to find tests that only pass on an
# idle machine before CI does: CI shares its 2 cores with whatever else the host runs, and a test
# that waits on a fixed clock or reads a count once fails there first.
#
#   bash scripts/stress-test.sh                      # npm test beside a hog at 60% of one core
#   STRESS_DUTY=0.9 bash scripts/stress-test.sh npx mocha dist/test/integration/long-poll.test.js
#
# STRESS_DUTY (0.6): the share of each 10 ms period the hog spins. The hog stops with the command;
# the command's exit status is the script's.
set -euo pipefail
cd "$(dirname "$0")/.."
duty="${STRESS_DUTY:-0.6}"
node -e '
  const duty = Number(process.argv[1]);
  if (!(duty > 0 && duty <= 1)) { console.error("STRESS_DUTY must be in (0, 1]"); process.exit(2); }
  const period = 10;
  const spin = () => {
    const until = performance.now() + period * duty;
    while (performance.now() < until);
    setTimeout(spin, period * (1 - duty));
  };
  spin();
' "$duty" &
hog=$!
trap 'kill "$hog" 2>/dev/null || true' EXIT
echo "stress-test: hog pid $hog at ${duty} of one core" >&2
if [ "$#" -eq 0 ]; then set -- npm test; fi
"$@"
