/**
 * After the ready line (`gregor start`), the broker loads, one step per turn of the event loop, what
 * a client's first requests would otherwise load on the spot: the protocol codecs of the APIs clients
 * send first (each API's generated module is a chunk of its own that the registry reads and compiles
 * on the API's first use: ~1 ms for Fetch's) and the native addons of the produce, read and write
 * paths. Start-up, spawn to ready, waits for none of it (what the issue asks: load before listening
 * only what serving needs); a request that arrives meanwhile waits at most one step.
 */
import { preloadCodec } from '../protocol/frame.js';
import { ApiKey } from '../protocol/generated/api-keys.js';
import { crc32cImplementation } from '../protocol/records/native.js';
import { cachedReadsEnabled } from './log/file-io.js';
import { sendNowaitCall } from './network/direct-write.js';

/** The APIs producers, consumers and groups of kafkajs, librdkafka and the Java client send first. */
export const FIRST_USED_APIS: readonly number[] = [
  ApiKey.ApiVersions,
  ApiKey.Metadata,
  ApiKey.Produce,
  ApiKey.Fetch,
  ApiKey.ListOffsets,
  ApiKey.FindCoordinator,
  ApiKey.OffsetFetch,
  ApiKey.OffsetCommit,
  ApiKey.JoinGroup,
  ApiKey.SyncGroup,
  ApiKey.Heartbeat,
  ApiKey.LeaveGroup,
  ApiKey.InitProducerId,
  ApiKey.OffsetForLeaderEpoch,
  ApiKey.CreateTopics,
  ApiKey.DescribeConfigs,
  ApiKey.DescribeCluster,
];

/** The default steps: each codec above, then the addons (each loads once per process; a missing one is just missing). */
export function warmUpSteps(): (() => void)[] {
  return [
    ...FIRST_USED_APIS.map((k) => () => void preloadCodec(k)),
    () => void crc32cImplementation(),
    () => void cachedReadsEnabled(),
    () => void sendNowaitCall(),
  ];
}

export interface WarmUp {
  /** resolves once every step ran, or at stop() */
  readonly done: Promise<void>;
  /** steps not yet run are dropped */
  stop(): void;
}

/** Runs `steps` one per turn of the event loop (setImmediate); a step that throws is skipped (the first use loads it then). */
export function startWarmUp(steps: readonly (() => void)[] = warmUpSteps()): WarmUp {
  let next = 0;
  let timer: NodeJS.Immediate | null = null;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const step = (): void => {
    timer = null;
    const f = steps[next++];
    if (f === undefined) {
      finish();
      return;
    }
    try {
      f();
    } catch {
      // the same load on first use reports its own error there
    }
    timer = setImmediate(step);
  };
  timer = setImmediate(step);
  return {
    done,
    stop() {
      if (timer !== null) clearImmediate(timer);
      timer = null;
      next = steps.length;
      finish();
    },
  };
}
