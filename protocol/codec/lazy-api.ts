/**
 * A protocol registry entry whose codecs are loaded on first use (issue 14, start-up): its key, name and
 * versions are there at once (what ApiVersions and dispatch read), its request and response codecs come
 * from `load` the first time either is read and are then kept as plain properties, so later reads run
 * no loader. protocol/generated/index.ts makes one per API, `load` requiring the API's module.
 */
export interface ApiInfo {
  readonly apiKey: number;
  readonly name: string;
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly flexibleMinVersion: number;
}

export function lazyApi<Q, S>(
  info: ApiInfo,
  load: () => { readonly request: Q; readonly response: S },
): ApiInfo & { readonly request: Q; readonly response: S } {
  const entry = { ...info } as ApiInfo & { request: Q; response: S };
  const side = (key: 'request' | 'response'): PropertyDescriptor => ({
    configurable: true,
    enumerable: true,
    get: () => {
      const codec = load();
      Object.defineProperty(entry, 'request', { value: codec.request, enumerable: true });
      Object.defineProperty(entry, 'response', { value: codec.response, enumerable: true });
      return codec[key];
    },
  });
  Object.defineProperty(entry, 'request', side('request'));
  Object.defineProperty(entry, 'response', side('response'));
  return entry;
}
