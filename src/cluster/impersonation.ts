// A kubeconfig user's impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`): read and
// checked as client-go's clientcmd does, sent as client-go's impersonating round tripper sends it
// (k8s.io/client-go/transport/round_trippers.go). client-node 2.0.1 sent the user alone and
// dropped the groups, uid and extra, so these headers are ours on every path.

export interface Impersonation {
  user: string;
  uid?: string;
  groups: string[];
  extra: [key: string, values: string[]][];
}

type Obj = Record<string, unknown>;

/** A header value with a control character would make every request fail in Node: refused at load. */
function headerValue(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new Error(`${where} must be a string`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(v)) throw new Error(`${where} holds a control character`);
  return v;
}

function stringList(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`${where} must be a list of strings`);
  return v.map((x, i) => headerValue(x, `${where}[${i}]`));
}

/** The user's impersonation, undefined when it has none; `uw` names the user in messages. */
// eslint-disable-next-line complexity -- one check per as/as-uid/as-groups/as-user-extra field, as clientcmd
export function impersonationOf(user: Obj, uw: string): Impersonation | undefined {
  const as = user.as === undefined || user.as === null || user.as === '' ? undefined : headerValue(user.as, `${uw}.as`);
  const uid =
    user['as-uid'] === undefined || user['as-uid'] === null || user['as-uid'] === ''
      ? undefined
      : headerValue(user['as-uid'], `${uw}.as-uid`);
  const groups = stringList(user['as-groups'], `${uw}.as-groups`);
  const rawExtra = user['as-user-extra'];
  if (rawExtra !== undefined && rawExtra !== null && (typeof rawExtra !== 'object' || Array.isArray(rawExtra)))
    throw new Error(`${uw}.as-user-extra must be a mapping of lists`);
  const extra = Object.entries((rawExtra ?? {}) as Obj).map(([k, vs]): [string, string[]] => [
    k,
    stringList(vs, `${uw}.as-user-extra.${k}`),
  ]);
  // clientcmd's validateAuthInfo: "requesting uid, groups or user-extra for X without impersonating a user".
  if (as === undefined) {
    if (uid !== undefined || groups.length > 0 || extra.length > 0)
      throw new Error(`requesting uid, groups or user-extra for ${uw} without impersonating a user`);
    return undefined;
  }
  return { user: as, ...(uid !== undefined ? { uid } : {}), groups, extra };
}

/** RFC 7230 token characters (net/http's isTokenTable, as client-go's legalHeaderKeyBytes), '%' aside. */
const TOKEN = /^[!#$&'*+\-.^_`|~0-9A-Za-z]$/;

/** client-go's headerKeyEscape: every byte outside the token set, and '%', percent-encoded. */
export function headerKeyEscape(key: string): string {
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && TOKEN.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * A header value as its UTF-8 bytes, as Go sends a string: Node writes a header string one byte
 * per character (Latin-1), so "josé" would leave as another name and a character past U+00FF
 * would throw on every request.
 */
const utf8Bytes = (v: string) => Buffer.from(v, 'utf8').toString('latin1');

/** The request headers for `imp` (a header with several values is sent once per value). */
export function impersonationHeaders(imp: Impersonation | undefined): Record<string, string | string[]> {
  if (!imp) return {};
  const headers: Record<string, string | string[]> = { 'impersonate-user': utf8Bytes(imp.user) };
  if (imp.uid !== undefined) headers['impersonate-uid'] = utf8Bytes(imp.uid);
  if (imp.groups.length > 0) headers['impersonate-group'] = imp.groups.map(utf8Bytes);
  for (const [k, vs] of imp.extra) {
    if (vs.length === 0) continue;
    const name = `impersonate-extra-${headerKeyEscape(k)}`;
    headers[name] = [...((headers[name] as string[] | undefined) ?? []), ...vs.map(utf8Bytes)];
  }
  return headers;
}
