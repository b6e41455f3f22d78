#!/usr/bin/env bash
# Makes sure everything `npm test` needs besides the root node_modules is present (idempotent).
#   1. Debian packages (scripts/setup-system.sh): kcat, kafka-python, librdkafka-dev, etcd, -dev libs.
#   2. @confluentinc/kafka-javascript 1.10.1 (bundled librdkafka 2.15.x) in compat/clients/confluent,
#      built from source against the system libs (CKJS_LINKING=dynamic): the prebuilt binary is
#      downloaded from GitHub, which is unreachable here.
# Silent when everything is already present; one line per step on stderr otherwise.
# Exits non-zero with a message on failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFLUENT_DIR="$ROOT/compat/clients/confluent"
CKJS_PKG="@confluentinc/kafka-javascript"
CKJS_VERSION="1.10.1"
RDKAFKA_PREFIX="2.15."

log() { echo "setup-test-deps: $*" >&2; }
die() { echo "setup-test-deps: ERROR: $*" >&2; exit 1; }

# ---- 1. system packages ----------------------------------------------------------------------
bash "$ROOT/scripts/setup-system.sh" || die "scripts/setup-system.sh failed (Debian packages missing?)"

# ---- 2. @confluentinc/kafka-javascript ---------------------------------------------------------
# Prints "<package version> <librdkafka version>" when the module loads; fails otherwise.
ckjs_probe() {
  (cd "$CONFLUENT_DIR" && node -e "
    const k = require('$CKJS_PKG');
    const v = require('$CKJS_PKG/package.json').version;
    process.stdout.write(v + ' ' + k.librdkafkaVersion);
  ") 2>/dev/null
}

ckjs_ok() {
  local out
  out="$(ckjs_probe)" || return 1
  [[ "$out" == "$CKJS_VERSION $RDKAFKA_PREFIX"* ]]
}

[ -f "$CONFLUENT_DIR/package.json" ] || die "missing $CONFLUENT_DIR/package.json"

if ! ckjs_ok; then
  command -v npm >/dev/null || die "npm not found"
  log "building $CKJS_PKG@$CKJS_VERSION from source in compat/clients/confluent (~2 min)"
  install_log="$(mktemp -t ckjs-install.XXXXXX.log)"
  # npm 11 skips dependency install scripts not approved in package.json "allowScripts"
  # (compat/clients/confluent/package.json approves this one); without it nothing gets compiled,
  # hence the explicit check for the .node file below.
  if ! (cd "$CONFLUENT_DIR" && CKJS_LINKING=dynamic npm install --no-audit --no-fund \
          >"$install_log" 2>&1); then
    tail -n 40 "$install_log" >&2
    die "npm install in compat/clients/confluent failed (full log: $install_log)"
  fi
  node_file="$CONFLUENT_DIR/node_modules/$CKJS_PKG/build/Release/confluent-kafka-javascript.node"
  if [ ! -f "$node_file" ]; then
    # The install script did not run (skipped by npm's script policy?) - run the build ourselves.
    # (npm rebuild goes through npm's config, e.g. nodedir, so node-gyp needs no download.)
    log "native module not built by npm install; running npm rebuild $CKJS_PKG"
    if ! (cd "$CONFLUENT_DIR" && CKJS_LINKING=dynamic npm rebuild "$CKJS_PKG" \
            >>"$install_log" 2>&1); then
      tail -n 40 "$install_log" >&2
      die "building $CKJS_PKG native module failed (full log: $install_log)"
    fi
  fi
  [ -f "$node_file" ] || die "$node_file was not produced (log: $install_log)"
  if ! ckjs_ok; then
    got="$(ckjs_probe || true)"
    die "$CKJS_PKG installed but does not load as $CKJS_VERSION with librdkafka ${RDKAFKA_PREFIX}x (got: '${got:-load error}'; log: $install_log)"
  fi
  log "$CKJS_PKG $(ckjs_probe | tr ' ' '\n' | sed -n 1p) ready (librdkafka $(ckjs_probe | cut -d' ' -f2))"
  rm -f "$install_log"
fi

# ---- 3. lint and format tools (scripts/lint) ------------------------------------------------------
# typescript-eslint needs typescript < 6.1 while the build uses typescript 7, so the lint tools have
# their own package (and lockfile) instead of sitting in the root devDependencies.
LINT_DIR="$ROOT/scripts/lint"
lint_ok() {
  [ -x "$LINT_DIR/node_modules/.bin/eslint" ] && [ -x "$LINT_DIR/node_modules/.bin/prettier" ] &&
    (cd "$LINT_DIR" && node -e "require.resolve('typescript-eslint'); require.resolve('globals')") 2>/dev/null
}
if ! lint_ok; then
  log "installing the lint tools in scripts/lint (npm ci)"
  lint_log="$(mktemp -t lint-install.XXXXXX.log)"
  if ! (cd "$LINT_DIR" && npm ci --no-audit --no-fund >"$lint_log" 2>&1); then
    tail -n 40 "$lint_log" >&2
    die "npm ci in scripts/lint failed (full log: $lint_log)"
  fi
  lint_ok || die "scripts/lint installed but eslint/prettier are missing (log: $lint_log)"
  rm -f "$lint_log"
fi
