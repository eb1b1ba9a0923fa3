// A short fingerprint of a view (decision-inputs.ts, status-field-echo.ts): equal views, equal
// digests, whatever the order of an object's keys; an undefined key is no key.
import { createHash } from 'node:crypto';
import { writeJson, type JsonStyle } from '../json/stringify.ts';

const SORTED: JsonStyle = {
  leaf: (v) => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
    return typeof (v as { toJSON?: unknown }).toJSON === 'function' ? JSON.stringify(v) : undefined;
  },
  keys: (o) =>
    Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort(),
};

/** A short fingerprint of a view: equal views, equal digests (object keys in any order). */
export function digest(view: unknown): string {
  return createHash('sha1').update(writeJson(view, SORTED)).digest('base64');
}
