"""One security cell for kafka-python 2.0.2 (run under /usr/bin/python3): produce, then read back in a group.

Reads one JSON object on stdin:
  {"bootstrap": "host:port", "topic": str, "group": str, "count": int, "client": {KafkaProducer/KafkaConsumer kwargs},
   "oauth": null | {"principal": str, "scope": str}}
"oauth" builds an unsecured JWT (alg none, Kafka's development tokens) for sasl_mechanism OAUTHBEARER.
Prints {"read": [values...]} on stdout; anything else goes to stderr; a failure exits non-zero.
"""
import base64
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b'=').decode()


class UnsecuredTokenProvider:
    def __init__(self, principal, scope):
        self.principal, self.scope = principal, scope

    def token(self):
        now = int(time.time())
        return b64({'alg': 'none'}) + '.' + b64({'sub': self.principal, 'iat': now, 'exp': now + 600, 'scope': self.scope}) + '.'


def main():
    args = json.load(sys.stdin)
    client = dict(args.get('client', {}))
    if args.get('oauth'):
        client['sasl_oauth_token_provider'] = UnsecuredTokenProvider(args['oauth']['principal'], args['oauth']['scope'])
    common = {'bootstrap_servers': args['bootstrap'], **client}
    producer = KafkaProducer(acks=-1, **common)
    for i in range(args['count']):
        producer.send(args['topic'], value=('p%d' % i).encode(), partition=0).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(args['topic'], group_id=args['group'], auto_offset_reset='earliest',
                             enable_auto_commit=False, consumer_timeout_ms=1000, **common)
    read, deadline = [], time.time() + 40
    while len(read) < args['count'] and time.time() < deadline:
        for m in consumer:
            read.append(m.value.decode())
    consumer.close()
    print(json.dumps({'read': read}))


if __name__ == '__main__':
    main()
