/**
 * DescribeTransactions (key 65) v0 (KIP-664): the coordinator's view of each transactional id (see
 * lib/txn/admin.ts for the fields and errors).
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import {
  defaultDescribeTransactionsResponseTransactionState,
  type DescribeTransactionsRequest,
  type DescribeTransactionsResponse,
} from '../../protocol/generated/describe-transactions.js';
import { describeTransaction } from '../txn/admin.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { AclOperation, transactionalIdAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

export const describeTransactionsHandler = defineHandler<DescribeTransactionsRequest, DescribeTransactionsResponse>({
  apiKey: ApiKey.DescribeTransactions,
  minVersion: 0,
  maxVersion: 0,
  handle(req, ctx) {
    return {
      throttleTimeMs: 0,
      transactionStates: req.transactionalIds.map((id) =>
        transactionalIdAllowed(ctx, AclOperation.DESCRIBE, id)
          ? describeTransaction(ctx.services.txn, id)
          : {
              ...defaultDescribeTransactionsResponseTransactionState(),
              errorCode: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
              transactionalId: id,
            },
      ),
    };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      transactionStates: req.transactionalIds.map((transactionalId) => ({
        ...defaultDescribeTransactionsResponseTransactionState(),
        errorCode,
        transactionalId,
      })),
    };
  },
});
