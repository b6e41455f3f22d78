/**
 * Producer ids, handed out in blocks (Kafka's ProducerIdManager). The end of the current block is
 * written to `<dataDir>/producer-id-block` (tmp → fsync → rename) before any id of the block is
 * used, so no id is ever handed out twice, across clean restarts and kill -9 alike: a restart
 * starts a fresh block where the persisted one ended.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../log/checkpoint.js';

export const PRODUCER_ID_BLOCK_FILE = 'producer-id-block';
export const PRODUCER_ID_BLOCK_SIZE = 1000n;
const FORMAT = /^version 0\nnext (\d+)\n$/;

export class ProducerIdManager {
  private next: bigint;
  private blockEnd: bigint;
  private pending: Promise<void> | null = null;

  private constructor(
    private readonly file: string,
    start: bigint,
    private readonly blockSize: bigint,
  ) {
    this.next = start;
    this.blockEnd = start;
  }

  /**
   * Reads where the last block ended (0 on a new data dir). A file it cannot parse stops the broker.
   * `floor` starts the ids there at least: a cluster's brokers each hand out ids from their own range
   * (node id × 2^40), so no two brokers ever hand out the same one.
   */
  static async open(dataDir: string, blockSize = PRODUCER_ID_BLOCK_SIZE, floor = 0n): Promise<ProducerIdManager> {
    const file = path.join(dataDir, PRODUCER_ID_BLOCK_FILE);
    let start = 0n;
    const text = await fsp.readFile(file, 'utf8').catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    });
    if (text !== null) {
      const m = FORMAT.exec(text);
      if (m?.[1] === undefined)
        throw new Error(`GREGOR_ERR_PRODUCER_ID_BLOCK: ${file} is not a producer-id block file; refusing to reuse producer ids`);
      start = BigInt(m[1]);
    }
    return new ProducerIdManager(file, start < floor ? floor : start, blockSize);
  }

  /** The first id of the next block to be reserved (what a restart would start from). */
  get persistedEnd(): bigint {
    return this.blockEnd;
  }

  /** A producer id never handed out before. */
  async generate(): Promise<bigint> {
    for (;;) {
      if (this.next < this.blockEnd) return this.next++;
      this.pending ??= this.reserve().finally(() => {
        this.pending = null;
      });
      await this.pending;
    }
  }

  private async reserve(): Promise<void> {
    const end = this.blockEnd + this.blockSize;
    await writeFileAtomic(this.file, `version 0\nnext ${end}\n`);
    this.blockEnd = end;
  }
}
