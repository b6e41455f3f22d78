/** What the compat smoke tests (single node and cluster) expect of the smoke subset's cells. */
import type { CellResult } from '../../compat/lib/types.js';
import { SCENARIOS } from '../../compat/scenarios/index.js';

export const SMOKE_SCENARIOS = SCENARIOS.filter((s) => s.smoke === true);
export const SMOKE_IDS = ['metadata', 'produce-consume', 'idempotent-producer', 'transactions'];

/** kafka-python 2.0.2 has neither an idempotent nor a transactional producer: those cells must say so. */
export const noEos = (c: { scenario: string; client: string }): boolean =>
  ['idempotent-producer', 'transactions'].includes(c.scenario) && c.client.startsWith('kafka-python');

/** The cells whose outcome is not the expected one (pass, or unsupported-client for noEos cells), as lines. */
export function unexpectedCells(cells: CellResult[]): string[] {
  return cells
    .filter((c) => c.outcome !== (noEos(c) ? 'unsupported-client' : 'pass'))
    .map((c) => `${c.scenario} × ${c.client}: ${c.outcome} ${c.reason ?? ''}`);
}

/** The smoke report's matrix rows every run must show. */
export const SMOKE_ROWS = [
  '| bootstrap + metadata | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |',
  '| transactions (abort + commit, read_committed) | ✓ | ✓ | ✓ | ✓ | — | — |',
];
