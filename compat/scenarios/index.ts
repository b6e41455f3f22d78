/** The matrix rows, in report order. */
import { adminScenarios } from './admin.js';
import { badInput } from './bad-input.js';
import type { Scenario } from './context.js';
import { groupFeatureScenarios } from './group-features.js';
import { consumerGroupScenario, eosScenarios } from './groups-txn.js';
import { legacyFormat } from './legacy.js';
import { produceConsumeScenarios } from './produce-consume.js';
import { shareGroupScenario } from './share-group.js';

export const SCENARIOS: Scenario[] = [
  ...produceConsumeScenarios,
  legacyFormat,
  ...adminScenarios,
  consumerGroupScenario,
  ...groupFeatureScenarios,
  shareGroupScenario,
  ...eosScenarios,
  badInput,
];
