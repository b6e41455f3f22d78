/**
 * Metric families computed at scrape time, for prom-client's Registry. prom-client's own Gauge and
 * Counter keep every label set in a hash map (hashing its labels on each set); families recomputed
 * whole on each scrape do not need that, and with thousands of partitions it made a scrape block the
 * event loop for hundreds of milliseconds. These subclasses keep prom-client's registry, validation
 * and text format but fill their values straight from the broker's state, one family per event-loop
 * turn (a Serial chains them with setImmediate), so a large scrape never holds up requests for long.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';

export type Labels = Record<string, string | number>;
/** Adds one sample: labels null for a series without labels. */
export type Put = (labels: Labels | null, value: number) => void;
export type Fill = (put: Put) => void;

type Sample = { labels: Labels; value: number };

/** Runs scrape work one piece per event-loop turn, in the order asked. */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => T): Promise<T> {
    const next = this.tail.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(work);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

function samples(fill: Fill): Sample[] {
  const values: Sample[] = [];
  fill((labels, value) => values.push({ labels: labels ?? {}, value }));
  return values;
}

class GaugeFamily extends Gauge {
  constructor(
    private readonly meta: { name: string; help: string; labelNames: readonly string[]; registers: Registry[] },
    private readonly serial: Serial,
    private readonly fill: Fill,
  ) {
    super(meta);
  }

  override get(): ReturnType<Gauge['get']> {
    const { name, help } = this.meta;
    return this.serial.run(() => ({ name, help, type: 'gauge', values: samples(this.fill), aggregator: 'sum' })) as unknown as ReturnType<
      Gauge['get']
    >;
  }
}

class CounterFamily extends Counter {
  constructor(
    private readonly meta: { name: string; help: string; labelNames: readonly string[]; registers: Registry[] },
    private readonly serial: Serial,
    private readonly fill: Fill,
  ) {
    super(meta);
  }

  override get(): ReturnType<Counter['get']> {
    const { name, help } = this.meta;
    return this.serial.run(() => ({ name, help, type: 'counter', values: samples(this.fill), aggregator: 'sum' })) as unknown as ReturnType<
      Counter['get']
    >;
  }
}

/** Defines families in one registry, all computed through one Serial. */
export class Families {
  readonly serial = new Serial();

  constructor(private readonly registry: Registry) {}

  gauge(name: string, help: string, labelNames: readonly string[], fill: Fill): void {
    new GaugeFamily({ name, help, labelNames, registers: [this.registry] }, this.serial, fill);
  }

  counter(name: string, help: string, labelNames: readonly string[], fill: Fill): void {
    new CounterFamily({ name, help, labelNames, registers: [this.registry] }, this.serial, fill);
  }
}
