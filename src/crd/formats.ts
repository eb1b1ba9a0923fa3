// String formats kube-openapi's strfmt.Default checks, for the ones CRDs in this project can meet.
// Formats the API server supports but this table lacks are not checked (see KNOWN_GAPS below).
import { RE2JS } from 're2js';
import { normalizeFormat } from './schema.ts';

type FormatCheck = (s: string) => boolean;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Go's time.Parse("2006-01-02", s): four-digit year, real month and day of month. */
export function isDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return day <= days;
}

const TIME = RE2JS.compile('^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$');

/** strfmt.IsDateTime: lower-cased, split on "t", a date and an RFC 3339 time (only the 2nd part is read). */
export function isDateTime(s: string): boolean {
  if (s.length < 4) return false;
  const parts = s.toLowerCase().split('t');
  if (parts.length < 2 || !isDate(parts[0])) return false;
  const m = TIME.matcher(parts[1]);
  if (!m.find()) return false;
  return (m.group(1) ?? '') <= '23' && (m.group(2) ?? '') <= '59' && (m.group(3) ?? '') <= '59';
}

function re2(pattern: string): FormatCheck {
  const re = RE2JS.compile(pattern);
  return (s) => re.test(s);
}

const shortName = re2('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$');
const longName = re2('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$');
const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8');

const CHECKS: ReadonlyMap<string, FormatCheck> = new Map<string, FormatCheck>([
  ['datetime', isDateTime],
  ['date', isDate],
  ['password', () => true],
  ['uuid', re2('(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$')],
  ['uuid3', re2('(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$')],
  ['uuid4', re2('(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$')],
  ['uuid5', re2('(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$')],
  ['k8sshortname', (s) => utf8Length(s) <= 63 && shortName(s)],
  ['k8slongname', (s) => utf8Length(s) <= 253 && longName(s)],
]);

/** Supported by the API server, not checked here (accepted as any string). */
export const KNOWN_GAPS: readonly string[] = [
  'bsonobjectid',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'isbn',
  'isbn10',
  'isbn13',
  'creditcard',
  'ssn',
  'hexcolor',
  'rgbcolor',
  'byte',
  'duration',
];

/** The check for a (non-stripped) schema format, or undefined when this table has none. */
export function formatCheck(format: string): FormatCheck | undefined {
  return CHECKS.get(normalizeFormat(format));
}
