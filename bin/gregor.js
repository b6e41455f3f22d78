#!/usr/bin/env node
// Tool commands (topic, produce, consume, ...) load only the CLI and the protocol client, not the broker.
import { isToolCommand, runTool } from '../dist/lib/cli/index.js';

const argv = process.argv.slice(2);
const run = isToolCommand(argv[0]) ? runTool : (await import('../dist/lib/cli.js')).main;

run(argv).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.stack : String(err));
    process.exit(1);
  },
);
