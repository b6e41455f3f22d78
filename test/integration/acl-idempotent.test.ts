/**
 * Idempotent producers under the ACL authorizer with `allow.everyone.if.no.acl.found=true` (issue 18):
 * Kafka's InitProducerId without a transactional id needs IDEMPOTENT_WRITE on the cluster or WRITE on
 * some topic (authorizeByResourceType), and Kafka's default authorizeByResourceType first asks about a
 * topic named "hardcode": when no ACL applies to that name, allow.everyone.if.no.acl.found grants the
 * type even though ACLs of other principals exist on other topics (gregor's 7a3b1b3).
 *
 * ACLs: ops ALLOW ALTER on the cluster (so the cluster has ACLs and allow.everyone does not grant carol
 * IDEMPOTENT_WRITE there), bob ALLOW WRITE on topic secret. carol has none: kafkajs's and librdkafka's
 * idempotent producers as carol get a producer id and produce to topic open. Then, as Kafka answers:
 *   - a DENY IDEMPOTENT_WRITE on the cluster for carol changes nothing (WRITE on the topic type still holds);
 *   - a DENY WRITE on topic * for carol: InitProducerId CLUSTER_AUTHORIZATION_FAILED (kafkajs's send
 *     fails with it, librdkafka raises it as a fatal error), a plain produce TOPIC_AUTHORIZATION_FAILED;
 *     (with an ALLOW DESCRIBE on * for her: else Metadata hides the topic and librdkafka fails on that first)
 *   - a DENY WRITE on topics prefixed "hard" for carol: InitProducerId CLUSTER_AUTHORIZATION_FAILED while
 *     a non-idempotent produce to open is allowed (the "hardcode" name is denied and carol has no ALLOW).
 */
import { expect } from 'chai';
import kafkajs, { type Admin } from 'kafkajs';
import { errorCollectingLogger, loadConfluent } from '../../compat/lib/confluent-module.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { outcome, plainKafka, startAclBroker } from '../helpers/acl.js';
import { Cleanup } from '../helpers/cleanup.js';
import type { RawClient } from '../helpers/raw-client.js';
import { rawSaslPlain } from '../helpers/sasl.js';
import type { LoggedBroker } from '../helpers/tls.js';

const { AclOperationTypes: Op, AclPermissionTypes: Perm, AclResourceTypes: Res, ResourcePatternTypes: Pat } = kafkajs;
const USERS = { admin: 'admin-secret', carol: 'carol-secret', bob: 'bob-secret', ops: 'ops-secret' } as const;

// the confluent package is untyped here
type Any = any;

describe('ACL: idempotent producers and authorizeByResourceType ("hardcode"), kafkajs and librdkafka', function () {
  this.timeout(180_000);
  const cleanup = new Cleanup();
  let b: LoggedBroker;
  let admin: Admin;
  let carolRaw: RawClient;
  const address = () => b.address('SASL_PLAINTEXT');

  before(async () => {
    b = cleanup.add(await startAclBroker(USERS, { 'allow.everyone.if.no.acl.found': 'true' }), (x) => x.stop());
    admin = plainKafka(address(), 'admin', USERS.admin).admin();
    await admin.connect();
    cleanup.add(admin, (a) => a.disconnect());
    await admin.createTopics({ topics: [{ topic: 'open' }, { topic: 'secret' }] });
    await admin.createAcls({
      acl: [
        aclOf('User:ops', Perm.ALLOW, Op.ALTER, Res.CLUSTER, 'kafka-cluster'),
        aclOf('User:bob', Perm.ALLOW, Op.WRITE, Res.TOPIC, 'secret'),
      ],
    });
    carolRaw = cleanup.add(await rawSaslPlain(address(), 'carol', USERS.carol), (c) => c.destroy());
  });
  after(() => cleanup.run());

  function aclOf(
    principal: string,
    permissionType: kafkajs.AclPermissionTypes,
    operation: kafkajs.AclOperationTypes,
    resourceType: kafkajs.AclResourceTypes,
    resourceName: string,
    prefixed = false,
  ) {
    return {
      principal,
      host: '*',
      permissionType,
      operation,
      resourceType,
      resourceName,
      resourcePatternType: prefixed ? Pat.PREFIXED : Pat.LITERAL,
    };
  }
  /** Runs `f` with `acls` in place, deleting them after. */
  async function withAcls<T>(acls: ReturnType<typeof aclOf>[], f: () => Promise<T>): Promise<T> {
    await admin.createAcls({ acl: acls });
    try {
      return await f();
    } finally {
      await admin.deleteAcls({ filters: acls });
    }
  }
  /** InitProducerId v4 without a transactional id, as carol: the error code. */
  const initPid = async () =>
    (
      await carolRaw.request<{ errorCode: number; producerId: bigint }>(ApiKey.InitProducerId, 4, {
        transactionalId: null,
        transactionTimeoutMs: 60000,
        producerId: -1n,
        producerEpoch: -1,
      })
    ).errorCode;
  /** kafkajs's non-idempotent producer as carol sends one record to `topic` (no producer id): OK or the Kafka error name. */
  const plainProduce = async (topic: string) => {
    const p = plainKafka(address(), 'carol', USERS.carol).producer({ idempotent: false, retry: { retries: 0 } });
    await p.connect();
    try {
      return await outcome(p.send({ topic, acks: -1, messages: [{ value: 'plain' }] }));
    } finally {
      await p.disconnect();
    }
  };
  /** kafkajs's idempotent producer as carol sends one record to `topic`: OK or the Kafka error name. */
  const kafkajsIdempotent = async (topic: string) => {
    const p = plainKafka(address(), 'carol', USERS.carol).producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 1, initialRetryTime: 100 },
    });
    try {
      // kafkajs asks for the producer id in connect()
      return await outcome(p.connect().then(() => p.send({ topic, acks: -1, messages: [{ value: 'kafkajs-idempotent' }] })));
    } finally {
      await p.disconnect();
    }
  };
  /**
   * librdkafka's idempotent producer (enable.idempotence=true) as carol sends one record to `topic`:
   * the delivery's offset, or the fatal error librdkafka raised (its error event names the cause).
   */
  const librdkafkaIdempotent = async (topic: string): Promise<{ offset?: string; fatal?: string }> => {
    const ck = loadConfluent();
    // the binding logs librdkafka's error events (the fatal one among them); the failed send itself says "Purged in queue"
    const { errors, logger } = errorCollectingLogger();
    const p: Any = new ck.KafkaJS.Kafka({
      kafkaJS: { brokers: [address()], clientId: 'rdk-idempotent', logger, logLevel: ck.KafkaJS.logLevel.ERROR },
      'security.protocol': 'sasl_plaintext',
      'sasl.mechanisms': 'PLAIN',
      'sasl.username': 'carol',
      'sasl.password': USERS.carol,
      'enable.idempotence': true,
      'message.timeout.ms': 20000,
    }).producer();
    await p.connect();
    try {
      const res: Any[] = await p.send({ topic, messages: [{ value: 'rdk-idempotent' }] });
      return { offset: String(res[0]?.baseOffset) };
    } catch (e) {
      // the error event may come after the send has failed
      for (let i = 0; i < 100 && !errors.some((m) => /authorization/i.test(m)); i++) await new Promise((r) => setTimeout(r, 100));
      return { fatal: [(e as Error).message, ...errors].join('; ') };
    } finally {
      await p.disconnect();
    }
  };

  it('raw InitProducerId: carol (no ACL of her own) gets a producer id; without the "hardcode" rule she would not', async () => {
    expect(await initPid()).to.equal(ErrorCode.NONE);
  });

  it('kafkajs and librdkafka idempotent producers as carol: InitProducerId and Produce succeed', async () => {
    expect(await kafkajsIdempotent('open')).to.equal('OK');
    expect(await librdkafkaIdempotent('open'))
      .to.have.property('offset')
      .that.matches(/^\d+$/);
    // she may not write bob's topic (its ACLs apply and none is hers)
    expect(await kafkajsIdempotent('secret')).to.equal('TOPIC_AUTHORIZATION_FAILED');
  });

  it('a DENY IDEMPOTENT_WRITE on the cluster for carol changes nothing: WRITE on the topic type still grants it (as Kafka)', async () => {
    await withAcls([aclOf('User:carol', Perm.DENY, Op.IDEMPOTENT_WRITE, Res.CLUSTER, 'kafka-cluster')], async () => {
      expect(await initPid()).to.equal(ErrorCode.NONE);
      expect(await kafkajsIdempotent('open')).to.equal('OK');
      expect(await librdkafkaIdempotent('open'))
        .to.have.property('offset')
        .that.matches(/^\d+$/);
    });
  });

  it('a DENY WRITE on topic * for carol (ALLOW DESCRIBE on *): InitProducerId CLUSTER_AUTHORIZATION_FAILED (kafkajs error, librdkafka fatal), Produce TOPIC_AUTHORIZATION_FAILED', async () => {
    // the DESCRIBE keeps Metadata open to her: without it librdkafka fails the record on the topic first
    const acls = [aclOf('User:carol', Perm.DENY, Op.WRITE, Res.TOPIC, '*'), aclOf('User:carol', Perm.ALLOW, Op.DESCRIBE, Res.TOPIC, '*')];
    await withAcls(acls, async () => {
      expect(await initPid()).to.equal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
      expect(await kafkajsIdempotent('open')).to.equal('CLUSTER_AUTHORIZATION_FAILED');
      expect((await librdkafkaIdempotent('open')).fatal).to.match(/Cluster authorization failed/i);
      expect(await plainProduce('open')).to.equal('TOPIC_AUTHORIZATION_FAILED');
    });
    expect(await initPid()).to.equal(ErrorCode.NONE);
  });

  it('a DENY WRITE on topics prefixed "hard" for carol: InitProducerId CLUSTER_AUTHORIZATION_FAILED, a plain produce to open still allowed (as Kafka)', async () => {
    await withAcls([aclOf('User:carol', Perm.DENY, Op.WRITE, Res.TOPIC, 'hard', true)], async () => {
      expect(await initPid()).to.equal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
      expect(await kafkajsIdempotent('open')).to.equal('CLUSTER_AUTHORIZATION_FAILED');
      expect((await librdkafkaIdempotent('open')).fatal).to.match(/Cluster authorization failed/i);
      expect(await plainProduce('open')).to.equal('OK');
    });
  });
});
