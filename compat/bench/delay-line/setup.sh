#!/usr/bin/env bash
# Creates the KAFKA-200 benchmark's two network namespaces joined by a veth pair, with addresses
# that exist only inside them, and an iptables rule in each that sends the packets arriving on the veth
# to NFQUEUE queue 0 (the delay-line program, started separately in each namespace, holds them).
#
#   setup.sh [prefix]      prefix defaults to gregor-k200 -> namespaces gregor-k200-a, gregor-k200-b
#
#   <prefix>-a: veth k200a, 10.200.0.1/30   (the broker)
#   <prefix>-b: veth k200b, 10.200.0.2/30   (the consumer)
#
# Nothing is added to the root namespace. Fails if the namespaces already exist (run teardown.sh).
# Note: with the rules in place and no delay-line reading the queue, the veth carries nothing.
set -euo pipefail
P="${1:-gregor-k200}"
A="$P-a"; B="$P-b"

if ip netns list | grep -qE "^($A|$B)( |$)"; then
  echo "setup.sh: namespace $A or $B already exists (teardown.sh $P)" >&2
  exit 1
fi
ip netns add "$A"
ip netns add "$B"
ip link add k200a netns "$A" type veth peer name k200b netns "$B"
ip -n "$A" addr add 10.200.0.1/30 dev k200a
ip -n "$B" addr add 10.200.0.2/30 dev k200b
for ns in "$A" "$B"; do
  ip -n "$ns" link set lo up
done
ip -n "$A" link set k200a up
ip -n "$B" link set k200b up
# The NFQUEUE target through iptables (xt_NFQUEUE; this kernel has no nft "queue" expression).
# Incoming packets are delayed, not outgoing ones: a packet held on the sender's OUTPUT hook still
# counts against its socket (sk_wmem_alloc), so TCP Small Queues would let only ~2 packets be in
# flight and throughput would collapse far below the window limit. On the receiving side the veth
# has already orphaned the packet from the sender's socket, so only the wire is slowed.
ip netns exec "$A" iptables -w -A INPUT -i k200a -j NFQUEUE --queue-num 0
ip netns exec "$B" iptables -w -A INPUT -i k200b -j NFQUEUE --queue-num 0
