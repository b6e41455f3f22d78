/**
 * Fault injection over the admin listener: the broker's FaultInjector (lib/network/faults.ts) as
 * JSON. Rules are those of the embedded API without `match` (lib/network/fault-rules.ts), with API
 * and error names allowed; GREGOR_FAULTS takes the same JSON.
 *
 *   GET    /v1/faults       200 {"faults": [rule with id, applied, remaining, remainingMs, held]}
 *   GET    /v1/faults/:id   200 rule | 404
 *   POST   /v1/faults       body: a rule or an array of rules; 201 {"ids": [...], "faults": [...]};
 *                           400 {"error": "GREGOR_ERR_FAULT_RULE", "message", "field", "index"}, nothing added
 *   DELETE /v1/faults/:id   204 | 404 (a removed 'pause' lets its held appends go ahead)
 *   DELETE /v1/faults       200 {"removed": n}
 * POST and DELETE are refused from another site, and a POST whose body is not declared JSON
 * (lib/admin/cross-site.ts): `curl --json '{...}' localhost:9644/v1/faults`.
 */
import type { ServerResponse } from 'node:http';
import { type FaultInjector, FaultRuleError } from '../network/faults.js';
import { guardMutations } from './cross-site.js';
import type { AdminRoute } from './routes.js';

const BY_ID = /^\/v1\/faults\/([^/]+)$/;

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function notFound(res: ServerResponse, id: string): void {
  send(res, 404, { error: 'GREGOR_ERR_FAULT_NOT_FOUND', message: `no fault rule ${id} (never added, removed, used up or expired)` });
}

function idOf(match: RegExpExecArray | null): string {
  const raw = match?.[1] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export function faultRoutes(injector: FaultInjector): AdminRoute[] {
  return guardMutations([
    {
      method: 'GET',
      path: '/v1/faults',
      handle: (_req, res) => send(res, 200, { faults: injector.list() }),
    },
    {
      method: 'GET',
      path: BY_ID,
      handle: (_req, res, { match }) => {
        const id = idOf(match);
        const h = injector.get(id);
        if (h === undefined) notFound(res, id);
        else send(res, 200, h.info());
      },
    },
    {
      method: 'POST',
      path: '/v1/faults',
      handle: (_req, res, { body }) => {
        const text = body.toString('utf8');
        if (text.trim() === '') {
          send(res, 400, {
            error: 'GREGOR_ERR_FAULT_RULE',
            message: 'GREGOR_ERR_FAULT_RULE: empty body: POST a JSON rule object or an array of rules',
            field: null,
            index: null,
          });
          return;
        }
        try {
          const added = injector.addJson(text);
          send(res, 201, { ids: added.map((h) => h.id), faults: added.map((h) => h.info()) });
        } catch (e) {
          if (!(e instanceof FaultRuleError)) throw e;
          send(res, 400, { error: e.code, message: e.message, field: e.field, index: e.index });
        }
      },
    },
    {
      method: 'DELETE',
      path: BY_ID,
      handle: (_req, res, { match }) => {
        const id = idOf(match);
        if (injector.remove(id)) send(res, 204);
        else notFound(res, id);
      },
    },
    {
      method: 'DELETE',
      path: '/v1/faults',
      handle: (_req, res) => send(res, 200, { removed: injector.clear() }),
    },
  ]);
}
