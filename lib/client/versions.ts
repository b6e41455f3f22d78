/**
 * The ApiVersions exchange (KIP-35, KIP-511): ask with the newest version we speak; a broker that
 * does not know it answers UNSUPPORTED_VERSION in the v0 layout with its own ApiVersions range, and
 * we ask again with the highest version both sides know.
 */
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import type { ApiVersionsResponse } from '../../protocol/generated/api-versions.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { decodeResponseBody } from './decode.js';
import { ClientError, ClientErrorCode, kafkaError } from './errors.js';

export interface ApiRange {
  min: number;
  max: number;
}

const API_VERSIONS = 18;

/** The v0 layout of an ApiVersions error answer: error code, then int32-counted (key, min, max) entries; bytes after are ignored. */
export function parseApiVersionsV0(frame: Buffer): { errorCode: number; apis: Map<number, ApiRange> } {
  // frame: correlation id (response header v0), then the body
  if (frame.length < 6) throw new RangeError('ApiVersions response too short');
  const errorCode = frame.readInt16BE(4);
  const apis = new Map<number, ApiRange>();
  if (frame.length >= 10) {
    const count = frame.readInt32BE(6);
    let p = 10;
    for (let i = 0; i < count && p + 6 <= frame.length; i++, p += 6) {
      apis.set(frame.readInt16BE(p), { min: frame.readInt16BE(p + 2), max: frame.readInt16BE(p + 4) });
    }
  }
  return { errorCode, apis };
}

/** Highest version in both ranges, or undefined. */
export function commonVersion(ours: ApiRange, theirs: ApiRange): number | undefined {
  const hi = Math.min(ours.max, theirs.max);
  return hi >= Math.max(ours.min, theirs.min) ? hi : undefined;
}

export async function negotiateApiVersions(
  sendRaw: (version: number, body: unknown) => Promise<Buffer>,
  software: { softwareName: string; softwareVersion: string },
  label: string,
): Promise<{ version: number; apis: Map<number, ApiRange> }> {
  const ours = API_KEYS.get(API_VERSIONS);
  if (ours === undefined) throw new Error('ApiVersions codec missing');
  let version = ours.maxVersion;
  for (let attempt = 0; attempt < 2; attempt++) {
    const body = version >= 3 ? { clientSoftwareName: software.softwareName, clientSoftwareVersion: software.softwareVersion } : {};
    const frame = await sendRaw(version, body);
    let errorCode: number;
    try {
      errorCode = frame.readInt16BE(4);
    } catch {
      throw new ClientError(ClientErrorCode.PROTOCOL, `ApiVersions response from ${label} is too short`, {
        broker: label,
        api: 'ApiVersions',
      });
    }
    if (errorCode === ErrorCode.UNSUPPORTED_VERSION && attempt === 0) {
      const theirs = parseApiVersionsV0(frame).apis.get(API_VERSIONS) ?? { min: 0, max: 0 };
      const v = commonVersion({ min: ours.minVersion, max: ours.maxVersion }, theirs);
      if (v === undefined || v === version) break;
      version = v;
      continue;
    }
    if (errorCode !== 0) throw kafkaError(errorCode, { api: 'ApiVersions', broker: label });
    let res: ApiVersionsResponse;
    try {
      res = decodeResponseBody(API_VERSIONS, version, frame) as ApiVersionsResponse;
    } catch (e) {
      throw new ClientError(
        ClientErrorCode.PROTOCOL,
        `cannot decode ApiVersions v${version} response from ${label}: ${(e as Error).message}`,
        { broker: label, api: 'ApiVersions', cause: e },
      );
    }
    const apis = new Map<number, ApiRange>();
    for (const k of res.apiKeys) apis.set(k.apiKey, { min: k.minVersion, max: k.maxVersion });
    return { version, apis };
  }
  throw kafkaError(ErrorCode.UNSUPPORTED_VERSION, { api: 'ApiVersions', broker: label, message: 'no ApiVersions version in common' });
}
