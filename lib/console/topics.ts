import type { ApiRoute, ConsoleDeps } from './types.js';
export function topicRoutes(_deps: ConsoleDeps, _listenerName: string): ApiRoute[] {
  return [];
}
