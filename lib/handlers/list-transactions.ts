/**
 * ListTransactions (key 66) v0–1 (KIP-664; v1 adds DurationFilter, KIP-994): the transactional ids
 * this coordinator knows, filtered by state, producer id and duration (see lib/txn/admin.ts).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { ListTransactionsRequest, ListTransactionsResponse } from '../../protocol/generated/list-transactions.js';
import { listTransactions } from '../txn/admin.js';
import { AclOperation, allowed, authorizing, ResourceType } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const listTransactionsHandler = defineHandler<ListTransactionsRequest, ListTransactionsResponse>({
  apiKey: ApiKey.ListTransactions,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const filters = {
      stateFilters: req.stateFilters,
      producerIdFilters: req.producerIdFilters,
      durationFilter: ctx.apiVersion >= 1 ? (req.durationFilter ?? -1n) : -1n,
    };
    const r = listTransactions(ctx.services.txn, filters);
    // only the transactional ids the principal may describe
    if (authorizing(ctx))
      r.transactionStates = r.transactionStates.filter((t) =>
        allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactionalId, false),
      );
    return { throttleTimeMs: 0, ...r };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, unknownStateFilters: [], transactionStates: [] };
  },
});
