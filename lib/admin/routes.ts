/**
 * The admin HTTP listener's routes (`admin.listener`): each module that serves part of the admin API
 * (metrics, health, request log, fault injection, ...) exports AdminRoutes, and the listener
 * dispatches to the first route whose method and path match.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Exact path, or a pattern whose groups reach `handle` through `match`. */
  path: string | RegExp;
  handle(req: IncomingMessage, res: ServerResponse, ctx: { url: URL; match: RegExpExecArray | null; body: Buffer }): void | Promise<void>;
}
