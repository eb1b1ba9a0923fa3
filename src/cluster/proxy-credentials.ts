// A proxy URL's user and password as Go's url.Parse takes them: every %XX is a byte (UTF-8 or
// not), a bad escape is an error; net/http sends those bytes in Proxy-Authorization.

/** The bytes a URL component's percent escapes stand for; undefined for a bad escape ("%zz"). */
export function percentDecodedBytes(component: string): Buffer | undefined {
  const bytes: Buffer[] = [];
  for (let i = 0; i < component.length;) {
    if (component[i] === '%') {
      const hex = component.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
      bytes.push(Buffer.from([parseInt(hex, 16)]));
      i += 3;
    } else {
      const cp = component.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      bytes.push(Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  return Buffer.concat(bytes);
}

/**
 * Why the proxy URL's credentials cannot be used, or undefined. SOCKS credentials must be UTF-8
 * (socks-proxy-agent decodes them as such).
 */
export function proxyCredentialsProblem(proxy: URL): string | undefined {
  const user = percentDecodedBytes(proxy.username);
  const pass = percentDecodedBytes(proxy.password);
  if (!user || !pass) return 'proxy-url has an invalid URL escape in its credentials';
  if (proxy.protocol.startsWith('socks')) {
    const utf8 = (b: Buffer) => Buffer.from(b.toString('utf8'), 'utf8').equals(b);
    if (!utf8(user) || !utf8(pass)) return 'proxy-url: the credentials of a SOCKS proxy must be UTF-8';
  }
  return undefined;
}

/** The Proxy-Authorization header for `proxy`'s credentials (checked at load), or undefined without any. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  const user = percentDecodedBytes(proxy.username) ?? Buffer.alloc(0);
  const pass = percentDecodedBytes(proxy.password) ?? Buffer.alloc(0);
  return `Basic ${Buffer.concat([user, Buffer.from(':'), pass]).toString('base64')}`;
}
