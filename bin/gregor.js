#!/usr/bin/env node
// Tool commands (topic, produce, consume, ...) load only the CLI and the protocol client, not the broker.
// `start` runs the bundled broker (dist/bundle/, scripts/bundle.mjs): a few files load much faster
// than the ~300 modules of dist/lib/.
import { isToolCommand, runTool } from '../dist/lib/cli/index.js';

const argv = process.argv.slice(2);
const run = isToolCommand(argv[0]) ? runTool : (await import('../dist/bundle/cli.js')).main;

run(argv).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.stack : String(err));
    process.exit(1);
  },
);
