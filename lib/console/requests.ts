import type { ApiRoute, ConsoleDeps } from './types.js';
export function requestRoutes(_deps: ConsoleDeps): ApiRoute[] {
  return [];
}
