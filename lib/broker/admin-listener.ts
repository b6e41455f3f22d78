/**
 * The admin HTTP listener (admin.listener). Left at its default, it takes a free port when a Kafka
 * listener asked for one (embedded brokers and tests) or when the default port is taken (with a
 * warning); a port set explicitly must bind, or start fails with GREGOR_ERR_ADMIN_LISTEN.
 */
import type { AdminRoute } from '../admin/routes.js';
import { AdminServer } from '../admin/server.js';
import { type BrokerConfig, parseAdminListener, parseListener } from '../config.js';
import type { Logger } from '../observability/logger.js';

/** Binds the admin listener serving `routes()`; null when admin.listener is `none`. */
export async function startAdminListener(
  config: BrokerConfig,
  routes: () => readonly AdminRoute[],
  logger: Logger,
): Promise<AdminServer | null> {
  const explicit = config.explicit.has('admin.listener');
  const spec = parseAdminListener(config.string('admin.listener') ?? 'none');
  if (spec === null) return null;
  const anyPort = config.list('listeners').some((l) => parseListener(l).port === 0);
  const all = routes();
  const make = (port: number) =>
    new AdminServer({ host: spec.host, port, allowRemote: config.bool('admin.listener.allow.remote'), routes: all, logger });
  let server = make(!explicit && anyPort ? 0 : spec.port);
  try {
    await server.listen();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (explicit || err.code !== 'EADDRINUSE') {
      throw new Error(
        `GREGOR_ERR_ADMIN_LISTEN: cannot bind the admin listener to ${spec.host}:${spec.port} (admin.listener): ${err.message}`,
        {
          cause: e,
        },
      );
    }
    logger.warn(
      { port: spec.port },
      `admin port ${spec.port} is in use: the admin listener takes a free port instead (set admin.listener to choose)`,
    );
    server = make(0);
    await server.listen();
  }
  return server;
}
