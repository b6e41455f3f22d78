/**
 * The web console (`/ui`, issue 19) on the admin listener. Only this stub is part of the broker's
 * start path: the console's server code (lib/console/) is imported on the first request under /ui,
 * so a broker nobody browses never loads it (`npm start`'s start-up time stays as it was).
 */
import type { ConsoleDeps, WebConsole } from '../console/types.js';
import type { AdminRoute } from './routes.js';

const UNDER_UI = /^\/ui(?:\/.*)?$/;

export function uiRoutes(deps: () => ConsoleDeps): AdminRoute[] {
  let loaded: Promise<WebConsole> | null = null;
  const handle: AdminRoute['handle'] = async (req, res, ctx) => {
    loaded ??= import('../console/index.js').then((m) => m.createConsole(deps()));
    await (await loaded).handle(req, res, ctx);
  };
  return (['GET', 'POST', 'PUT', 'DELETE'] as const).map((method) => ({ method, path: UNDER_UI, handle }));
}
