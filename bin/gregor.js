#!/usr/bin/env node
'use strict';
// `gregor start` (also no command, or options only) runs the bundled broker through bin/load-broker.js:
// one CommonJS file compiled from a V8 code cache, with no ES module loader (start-up time).
// Tool commands (topic, produce, consume, ...) load only the CLI and the protocol client, as ES
// modules from dist/lib/, not the broker.
const argv = process.argv.slice(2);
const command = argv[0];

function startBroker(args) {
  const { main, saveCodeCache } = require('./load-broker.js').loadBroker();
  return main(args, saveCodeCache !== undefined ? { beforeReadyLine: saveCodeCache } : {});
}

async function toolOrBroker(args) {
  const cli = await import('../dist/lib/cli/index.js');
  return cli.isToolCommand(args[0]) ? cli.runTool(args) : startBroker(args);
}

const startPath = command === undefined || command === 'start' || command.startsWith('-');
(startPath ? startBroker(argv) : toolOrBroker(argv)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.stack : String(err));
    process.exit(1);
  },
);
