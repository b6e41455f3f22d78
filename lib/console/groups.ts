import type { ApiRoute, ConsoleDeps } from './types.js';
export function groupRoutes(_deps: ConsoleDeps, _listenerName: string): ApiRoute[] {
  return [];
}
