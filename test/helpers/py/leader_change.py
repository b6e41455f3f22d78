"""Produce then read back one partition with kafka-python 2.0.2, slowly, so that leader changes made
meanwhile by the test happen under both (run under /usr/bin/python3).

Reads one JSON object on stdin:
  {"bootstrap": "host:port", "topic": str, "partition": int, "count": int, "interval_ms": int}
Produces `count` records (values "py-<i>", acks=all, each waited for), then reads the partition from
the beginning a few records per poll up to the last offset it was told, and prints one JSON line:
  {"sent": [offset, ...], "read": [[offset, value], ...]}
An error the client lets through to the application ends the script with a traceback (exit 1).
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    args = json.load(sys.stdin)
    topic, partition, count = args['topic'], args['partition'], args['count']
    pause = args['interval_ms'] / 1000.0
    producer = KafkaProducer(bootstrap_servers=args['bootstrap'], acks='all', retries=10, retry_backoff_ms=200,
                             max_in_flight_requests_per_connection=1)
    sent = []
    for i in range(count):
        meta = producer.send(topic, value=('py-%d' % i).encode(), partition=partition).get(timeout=30)
        sent.append(meta.offset)
        time.sleep(pause)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=args['bootstrap'], group_id=None, enable_auto_commit=False,
                             max_poll_records=5, fetch_max_wait_ms=100, retry_backoff_ms=200)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    read = []
    deadline = time.time() + 60
    # a send retried across a leader change may have been stored twice (kafka-python 2.0.2 has no
    # idempotence): read up to the last offset the producer was told, whatever came before it
    while (not read or read[-1][0] < max(sent)) and time.time() < deadline:
        for _, msgs in consumer.poll(timeout_ms=200).items():
            for m in msgs:
                read.append([m.offset, m.value.decode()])
        time.sleep(pause)
    consumer.close()
    print(json.dumps({'sent': sent, 'read': read}), flush=True)


if __name__ == '__main__':
    main()
