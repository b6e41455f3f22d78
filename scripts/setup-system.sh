#!/usr/bin/env bash
# Installs the Debian packages the tests and the compat suite need, only when missing (idempotent).
# Needs root (or sudo). Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

PACKAGES=(
  kcat python3-kafka etcd-server openssl
  libcurl4-openssl-dev libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev
  librdkafka-dev python3-snappy python3-lz4 python3-zstandard python3-xxhash iproute2 nftables iptables
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup-system: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
