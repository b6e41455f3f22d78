"""kafka-python 2.0.2 driver for gregor's compat suite (run under /usr/bin/python3).

Reads one JSON command on stdin: {"op": ..., "bootstrap": "host:port", "api_version": null | [0, 10, 0], ...}
and prints one JSON line: {"ok": result} or {"error": message, "notSupported": bool}.
"notSupported" marks a refusal by the client itself (its version checks), not a broker failure.
"""
import json
import sys
import threading
import time

from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import IncompatibleBrokerVersion, UnsupportedCodecError, UnsupportedVersionError
from kafka.structs import OffsetAndMetadata


class NotSupported(Exception):
    pass


def common(cmd):
    av = tuple(cmd['api_version']) if cmd.get('api_version') else None
    return {'bootstrap_servers': cmd['bootstrap'], 'api_version': av, 'request_timeout_ms': 20000}


def read_record(m):
    return {'partition': m.partition, 'offset': m.offset, 'timestamp': m.timestamp,
            'key': None if m.key is None else m.key.decode(), 'value': None if m.value is None else m.value.decode(),
            'headers': [[k, v.decode()] for k, v in (m.headers or [])]}


def metadata(cmd):
    c = KafkaConsumer(**common(cmd))
    try:
        topics = []
        for t in cmd['topics']:
            parts = c.partitions_for_topic(t) or set()
            cluster = c._client.cluster
            topics.append({'name': t, 'partitions': [{'partition': p, 'leader': cluster.leader_for_partition(TopicPartition(t, p))} for p in sorted(parts)]})
        brokers = [{'nodeId': b.nodeId, 'host': b.host, 'port': b.port} for b in c._client.cluster.brokers()]
        return {'brokers': brokers, 'topics': topics}
    finally:
        c.close()


def produce(cmd):
    codec = cmd['codec']
    try:
        p = KafkaProducer(acks=cmd['acks'] if cmd['acks'] != -1 else 'all', compression_type=None if codec == 'none' else codec,
                          linger_ms=5, **common(cmd))
    except (AssertionError, UnsupportedCodecError) as e:
        raise NotSupported('kafka-python refuses %s here: %s' % (codec, e or 'codec needs a newer api_version'))
    try:
        futures = []
        for r in cmd['records']:
            kw = {'key': None if r['key'] is None else r['key'].encode(), 'value': r['value'].encode(),
                  'partition': r['partition'], 'timestamp_ms': r['timestamp']}
            if cmd.get('headers', True) and r['headers']:
                kw['headers'] = [(k, v.encode()) for k, v in r['headers']]
            futures.append(p.send(cmd['topic'], **kw))
        p.flush()
        for f in futures:
            f.get(timeout=30)
    finally:
        p.close()


def consume(cmd):
    c = KafkaConsumer(group_id=None, enable_auto_commit=False, check_crcs=True, fetch_max_wait_ms=100, **common(cmd))
    try:
        want = {p['partition']: p['count'] for p in cmd['partitions']}
        tps = [TopicPartition(cmd['topic'], p['partition']) for p in cmd['partitions']]
        c.assign(tps)
        for p in cmd['partitions']:
            c.seek(TopicPartition(cmd['topic'], p['partition']), p['from'])
        got = {p: 0 for p in want}
        out = []
        deadline = time.time() + cmd['timeoutMs'] / 1000
        while any(got[p] < want[p] for p in want) and time.time() < deadline:
            for tp, msgs in c.poll(timeout_ms=200).items():
                for m in msgs:
                    got[tp.partition] += 1
                    out.append(read_record(m))
        return out
    finally:
        c.close()


def offset_for_time(cmd):
    c = KafkaConsumer(**common(cmd))
    try:
        tp = TopicPartition(cmd['topic'], cmd['partition'])
        try:
            res = c.offsets_for_times({tp: cmd['timestamp']})
        except UnsupportedVersionError as e:
            raise NotSupported('offsets_for_times: %s' % e)
        found = res.get(tp)
        return -1 if found is None else found.offset
    finally:
        c.close()


def admin(cmd):
    try:
        return KafkaAdminClient(**common(cmd))
    except IncompatibleBrokerVersion as e:
        raise NotSupported(str(e))


def admin_op(cmd):
    a = admin(cmd)
    try:
        op, topic = cmd['op'], cmd['topic']
        try:
            if op == 'createTopic':
                a.create_topics([NewTopic(topic, cmd['partitions'], 1)])
            elif op == 'deleteTopic':
                a.delete_topics([topic])
            elif op == 'createPartitions':
                a.create_partitions({topic: NewPartitions(cmd['total'])})
            elif op == 'describeConfigs':
                res = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={n: None for n in cmd['names']})])
                entries = res[0].resources[0][4]
                return {e[0]: e[1] for e in entries if e[0] in cmd['names']}
            elif op == 'alterConfigs':
                res = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=cmd['entries'])])
                err = res.resources[0][0]
                if err != 0:
                    raise Exception('AlterConfigs error %d: %s' % (err, res.resources[0][1]))
        except IncompatibleBrokerVersion as e:
            raise NotSupported(str(e))
        return None
    finally:
        a.close()


class Member(threading.Thread):
    """One group member polling in its own thread (kafka-python rejoins only inside poll)."""

    def __init__(self, cmd):
        super().__init__(daemon=True)
        self.c = KafkaConsumer(cmd['topic'], group_id=cmd['groupId'], enable_auto_commit=False, auto_offset_reset='earliest',
                               session_timeout_ms=10000, heartbeat_interval_ms=500, fetch_max_wait_ms=100, **common(cmd))
        self.first, self.seen, self.stop, self.commit = {}, {}, False, None

    def assigned(self):
        return sorted(tp.partition for tp in self.c.assignment())

    def run(self):
        while not self.stop:
            for tp, msgs in self.c.poll(timeout_ms=100).items():
                for m in msgs:
                    self.first.setdefault(tp.partition, m.offset)
                    self.seen[tp.partition] = m.offset + 1
            if self.commit is not None:
                self.c.commit(self.commit)
                self.commit = None
        self.c.close()


def until(what, cond, timeout):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise Exception('kafka-python group: timed out waiting for ' + what)
        time.sleep(0.05)


def group(cmd):
    topic, n, at, t = cmd['topic'], cmd['partitions'], cmd['commitAt'], cmd['timeoutMs'] / 1000
    parts = list(range(n))
    a = Member(cmd)
    a.start()
    until('member A to get every partition and read them', lambda: a.assigned() == parts and all(a.seen.get(p, 0) >= at for p in parts), t)
    first = a.assigned()
    a.commit = {TopicPartition(topic, p): OffsetAndMetadata(at, None) for p in parts}
    until('the commit', lambda: a.commit is None, t)
    b = Member(cmd)
    b.start()
    until('the rebalance to split the partitions', lambda: a.assigned() and b.assigned() and len(a.assigned()) + len(b.assigned()) == n, t)
    rebalanced = [a.assigned(), b.assigned()]
    a.stop = b.stop = True
    a.join()
    b.join()
    c = Member(cmd)
    c.start()
    try:
        until('a fresh member to resume every partition', lambda: all(p in c.first for p in parts), t)
    finally:
        c.stop = True
        c.join()
    return {'firstAssignment': first, 'rebalanced': rebalanced, 'committed': {str(p): at for p in parts}, 'resumed': {str(p): o for p, o in c.first.items()}}


EMIT_LOCK = threading.Lock()


def emit(obj):
    with EMIT_LOCK:
        sys.stdout.write(json.dumps(obj) + '\n')
        sys.stdout.flush()


class ReportingListener(ConsumerRebalanceListener):
    """Reports each rebalance callback (kafka-python's are eager: the whole assignment each time)."""

    def on_partitions_revoked(self, revoked):
        emit({'event': 'revoke', 'partitions': [[tp.topic, tp.partition] for tp in revoked]})

    def on_partitions_assigned(self, assigned):
        emit({'event': 'assign', 'partitions': [[tp.topic, tp.partition] for tp in assigned]})


def member(cmd):
    """A long-running group member: one JSON event line per rebalance callback and per record, until a line
    (or EOF) arrives on stdin; then it closes (LeaveGroup) and prints the usual result line."""
    c = KafkaConsumer(group_id=cmd['groupId'], enable_auto_commit=False, auto_offset_reset='earliest', session_timeout_ms=10000,
                      heartbeat_interval_ms=500, fetch_max_wait_ms=100, metadata_max_age_ms=cmd['metadataMaxAgeMs'], **common(cmd))
    if cmd.get('pattern'):
        c.subscribe(pattern=cmd['pattern'], listener=ReportingListener())
    else:
        c.subscribe(topics=cmd['topics'], listener=ReportingListener())
    stop = threading.Event()

    def wait_stop():
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=wait_stop, daemon=True).start()
    emit({'event': 'started'})
    try:
        while not stop.is_set():
            for tp, msgs in c.poll(timeout_ms=100).items():
                for m in msgs:
                    emit({'event': 'record', 'topic': tp.topic, 'partition': tp.partition, 'offset': m.offset,
                          'value': None if m.value is None else m.value.decode()})
    finally:
        c.close()
    return None


OPS = {'metadata': metadata, 'produce': produce, 'consume': consume, 'offsetForTime': offset_for_time, 'group': group,
       'member': member, 'createTopic': admin_op, 'deleteTopic': admin_op, 'createPartitions': admin_op, 'describeConfigs': admin_op, 'alterConfigs': admin_op}


def main():
    cmd = json.loads(sys.stdin.readline())
    try:
        print(json.dumps({'ok': OPS[cmd['op']](cmd)}))
    except NotSupported as e:
        print(json.dumps({'error': str(e), 'notSupported': True}))
    except Exception as e:  # noqa: BLE001 - every failure is reported to the runner
        print(json.dumps({'error': '%s: %s' % (type(e).__name__, e), 'notSupported': False}))


if __name__ == '__main__':
    main()
