/**
 * The child process of rdkafkaRoundTrip (roundtrip.ts): reads {props, topic, count} as JSON on stdin,
 * runs the librdkafka produce-then-consume round trip, writes {got} as JSON on stdout; a failure is
 * written to stderr with exit code 1.
 */
import { rdkafkaRoundTripInProcess } from './roundtrip.js';

const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
const { props, topic, count } = JSON.parse(Buffer.concat(chunks).toString()) as {
  props: Record<string, unknown>;
  topic: string;
  count: number;
};
try {
  const got = await rdkafkaRoundTripInProcess(props, topic, count);
  process.stdout.write(JSON.stringify({ got }));
  process.exit(0);
} catch (e) {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
}
