import type { ApiRoute, ConsoleDeps } from './types.js';
export function messageRoutes(_deps: ConsoleDeps, _listenerName: string): ApiRoute[] {
  return [];
}
