/** gregor's wire format: codecs for every Kafka API and version, frames, record formats. No I/O. */
export { GregorErrorCode, ProtocolError } from './codec/errors.js';
export { Reader, type TaggedField } from './codec/reader.js';
export { Writer } from './codec/writer.js';
export { ApiKey, API_KEYS, type ApiKeyInfo, requestHeaderVersion, responseHeaderVersion } from './generated/api-keys.js';
export { ErrorCode, ERRORS, errorName, isRetriable } from './generated/error-codes.js';
export { API_CODECS, type ApiCodec, type MessageCodec } from './generated/index.js';
export * from './frame.js';
