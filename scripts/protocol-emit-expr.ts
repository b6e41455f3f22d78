/** Small pieces of the emitter: field type tests and the condition/choice strings the emitted code is built from. */
import { PRIMITIVES } from './protocol-model.js';

export const NUMERIC = new Set(['int8', 'int16', 'uint16', 'int32', 'uint32', 'float64']);

export function isArray(t: string): boolean {
  return t.startsWith('[]');
}

export function elemType(t: string): string {
  return t.slice(2);
}

export function isStructType(t: string): boolean {
  return !PRIMITIVES.has(t);
}

/** Picks a or b when c is constant, else a conditional expression. */
export function choose(c: string, a: string, b: string): string {
  if (c === 'true') return a;
  if (c === 'false') return b;
  if (a === b) return a;
  return `(${c} ? ${a} : ${b})`;
}

/** Picks statement a or b when c is constant, else an if/else. */
export function chooseStmt(c: string, a: string, b: string): string {
  if (c === 'true') return a;
  if (c === 'false') return b;
  if (a === b) return a;
  return `if (${c}) { ${a} } else { ${b} }`;
}

export function and(a: string, b: string): string {
  if (a === 'false' || b === 'false') return 'false';
  if (a === 'true') return b;
  if (b === 'true') return a;
  return `(${a}) && (${b})`;
}

export function not(a: string): string {
  if (a === 'true') return 'false';
  if (a === 'false') return 'true';
  return `!(${a})`;
}
