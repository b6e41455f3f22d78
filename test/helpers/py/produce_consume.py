"""Produce and read back records with kafka-python 2.0.2 (run under /usr/bin/python3).

Reads one JSON object on stdin:
  {"bootstrap": "host:port", "api_version": null | [0, 10, 0], "acks": 1, "client": {extra client kwargs, e.g. ssl_cafile},
   "runs": [{"topic": str, "codec": "none"|"gzip"|"snappy"|"lz4"|"zstd",
             "records": [{"p": int, "k": hex, "v": hex, "ts": int, "h": [[name, hex], ...]}, ...]}, ...]}
and, per run, prints JSON lines on stdout:
  {"topic": t, "phase": "sent", "meta": [[partition, offset, timestamp], ...]}   (in input order)
  {"topic": t, "phase": "read", "records": [[partition, offset, timestamp, timestamp_type, key_hex, value_hex, [[name, hex], ...]], ...]}
Reading uses assign + seek_to_beginning with check_crcs=True and stops once each partition has
returned as many records as were sent to it (or a 60 s deadline passes: the test then sees fewer).
Anything else goes to stderr; a failure exits non-zero.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def unhex(v):
    return None if v is None else bytes.fromhex(v)


def tohex(v):
    return None if v is None else bytes(v).hex()


def main():
    args = json.load(sys.stdin)
    api_version = tuple(args['api_version']) if args.get('api_version') else None
    common = {'bootstrap_servers': args['bootstrap'], 'api_version': api_version, **args.get('client', {})}
    for run in args['runs']:
        topic, codec = run['topic'], run['codec']
        producer = KafkaProducer(acks=args.get('acks', 1), compression_type=None if codec == 'none' else codec,
                                 linger_ms=20, batch_size=256 * 1024, max_request_size=4 * 1024 * 1024, **common)
        futures = []
        for r in run['records']:
            headers = [(name, unhex(v)) for name, v in r['h']] if 'h' in r else None
            kwargs = {'key': unhex(r['k']), 'value': unhex(r['v']), 'partition': r['p'], 'timestamp_ms': r['ts']}
            if headers is not None:
                kwargs['headers'] = headers
            futures.append(producer.send(topic, **kwargs))
        producer.flush()
        meta = []
        for f in futures:
            m = f.get(timeout=30)
            meta.append([m.partition, m.offset, m.timestamp])
        producer.close()
        print(json.dumps({'topic': topic, 'phase': 'sent', 'meta': meta}), flush=True)

        want = {}
        for r in run['records']:
            want[r['p']] = want.get(r['p'], 0) + 1
        consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, check_crcs=True,
                                 max_poll_records=5000, fetch_max_wait_ms=100, **common)
        tps = [TopicPartition(topic, p) for p in sorted(want)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got = {p: 0 for p in want}
        out = []
        deadline = time.time() + 60
        while any(got[p] < want[p] for p in want) and time.time() < deadline:
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                for m in msgs:
                    got[tp.partition] += 1
                    out.append([m.partition, m.offset, m.timestamp, m.timestamp_type, tohex(m.key), tohex(m.value),
                                [[name, tohex(v)] for name, v in (m.headers or [])]])
        consumer.close()
        print(json.dumps({'topic': topic, 'phase': 'read', 'records': out}), flush=True)


if __name__ == '__main__':
    main()
