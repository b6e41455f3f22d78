#!/usr/bin/python3
"""Capture driver: kafka-python (Debian python3-kafka 2.0.2). Run with /usr/bin/python3.

Env: CAPTURE_BOOTSTRAP=127.0.0.1:PORT, CAPTURE_PLAN=<plan.json>,
     CAPTURE_API_VERSION=auto | 0.10.0  (auto = probe with ApiVersions v0 + Metadata v0).
Producer (one KafkaProducer per plan batch, i.e. per codec) then a consumer with a group that
reads everything back, commits and leaves.
"""
import json
import logging
import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

logging.basicConfig(level=logging.CRITICAL)

bootstrap = os.environ["CAPTURE_BOOTSTRAP"]
with open(os.environ["CAPTURE_PLAN"]) as f:
    plan = json.load(f)
api = os.environ.get("CAPTURE_API_VERSION", "auto")
api_version = None if api == "auto" else tuple(int(x) for x in api.split("."))
started = time.time()
budget = float(os.environ.get("CAPTURE_DRIVER_TIMEOUT_MS", "18000")) / 1000.0
client_id = "gregor-capture-kafka-python-" + ("auto" if api_version is None else api)


def b(s):
    return None if s is None else s.encode("utf-8")


def log(msg):
    print("kafka-python driver (%s): %s" % (api, msg), file=sys.stderr)


common = dict(bootstrap_servers=[bootstrap], client_id=client_id, api_version=api_version)

produced = 0
for batch in plan["batches"]:
    codec = None if batch["codec"] == "none" else batch["codec"]
    producer = KafkaProducer(
        compression_type=codec,
        acks=batch["acks"] if batch["acks"] != -1 else "all",
        linger_ms=100,
        retries=1,
        request_timeout_ms=3000,
        max_block_ms=5000,
        **common
    )
    if api_version is None:
        log("inferred broker version %s" % (producer.config["api_version"],))
    futures = []
    for r in batch["records"]:
        kw = {}
        if r["headers"]:
            kw["headers"] = [(h["key"], b(h["value"])) for h in r["headers"]]
        futures.append(
            producer.send(plan["topic"], value=b(r["value"]), key=b(r["key"]),
                          partition=batch["partition"], **kw)
        )
    producer.flush(timeout=5)
    for fut in futures:
        try:
            fut.get(timeout=1)
            produced += 1
        except Exception as e:  # the mock rejects legacy (magic 0/1) message sets
            log("%s: produce failed: %r" % (batch["codec"], e))
            break
    producer.close(timeout=2)

# Only wait for what the mock accepted; with nothing to read, still join the group and fetch once.
expected = produced
consumer = KafkaConsumer(
    plan["topic"],
    group_id=plan["groupId"],
    auto_offset_reset="earliest",
    enable_auto_commit=True,
    auto_commit_interval_ms=300,
    heartbeat_interval_ms=500,
    session_timeout_ms=10000,
    fetch_max_wait_ms=200,
    consumer_timeout_ms=(int(max(1.0, budget - (time.time() - started) - 3.0) * 1000)
                         if expected else 3000),
    **common
)
got = 0
for msg in consumer:
    got += 1
    if got >= expected:
        break
# Offsets API (ListOffsets) explicitly, plus a manual commit.
parts = [TopicPartition(plan["topic"], p) for p in sorted(consumer.partitions_for_topic(plan["topic"]) or [])]
try:
    consumer.beginning_offsets(parts)
    consumer.end_offsets(parts)
except Exception as e:
    log("offsets: %r" % (e,))
time.sleep(0.8)  # let a heartbeat go out
try:
    consumer.commit()
except Exception as e:
    log("commit: %r" % (e,))
consumer.close()
log("consumed %d/%d" % (got, expected))
