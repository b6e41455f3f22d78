/** What the web console (lib/console/, loaded on the first /ui request) is given by the broker. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Broker } from '../broker.js';
import type { BrokerServices } from '../services.js';

export interface ConsoleDeps {
  services: BrokerServices;
  /** metrics, request log, fault rules, readiness, addresses */
  broker: Broker;
  /** aborted when the broker stops: live tails end */
  signal: AbortSignal;
}

export interface RouteContext {
  url: URL;
  match: RegExpExecArray | null;
  body: Buffer;
}

export interface WebConsole {
  handle(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<void>;
}

/** One endpoint of the console's JSON API under /ui/api/. */
export interface ApiRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** matched against the path after /ui/api */
  path: RegExp;
  handle(req: IncomingMessage, res: ServerResponse, ctx: ApiContext): unknown;
}

export interface ApiContext {
  url: URL;
  /** the path pattern's groups, URI-decoded */
  params: string[];
  body: Buffer;
}
