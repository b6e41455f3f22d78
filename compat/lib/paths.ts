import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root: this file runs from dist/compat/lib/. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const RESULTS_DIR = resolve(ROOT, 'compat/results');
