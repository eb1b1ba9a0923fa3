// Second review (s14) of 3723cc9's impersonation headers (src/cluster/impersonation.ts), beside
// client-go (transport/round_trippers.go). Header names, the extra keys' escaping (UTF-8 bytes,
// '%'), their case (the API server lowercases them) and sending them over plain HTTP (clientcmd
// sets Impersonate before its "only if we are secure" block) all agree with client-go.
//
// Finding: a name outside ASCII. client-go writes the value's UTF-8 bytes (net/http accepts
// obs-text), and the API server reads them back as the same string. Node encodes a header value as
// Latin-1: "josé" leaves as the byte 0xE9 (the API server then impersonates "jos\xE9", another
// user, or none), and a character past U+00FF ("ユーザー", "Zoë Łukasz") makes Node throw "Invalid
// character in header content" on every request. impersonationOf refuses only control
// characters at load, so such a kubeconfig starts and then fails every call. User names and
// groups from OIDC and the like are UTF-8; headerKeyEscape already treats the extra keys as UTF-8
// bytes, the values are not.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { impersonationHeaders, impersonationOf } from '../../src/cluster/impersonation.ts';
import { listen } from './support/loopback.ts';

/** A header as its bytes were sent, read as UTF-8 (Node's server reads header bytes as Latin-1). */
const utf8 = (latin1: string | undefined) => (latin1 === undefined ? undefined : Buffer.from(latin1, 'latin1').toString('utf8'));

describe('review 2: impersonation of a name outside ASCII', () => {
  let server: Server;
  let url = '';
  const seen: Record<string, string[] | undefined>[] = [];
  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.headersDistinct);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    url = `http://127.0.0.1:${await listen(server)}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const cases: [string, string, string, string][] = [
    ['Latin-1 (sent as one byte each, another name)', 'josé', 'équipe', 'réglage'],
    ['past U+00FF (every call throws)', 'ユーザー', 'Łódź-team', '値'],
  ];
  for (const [what, user, group, extra] of cases) {
    it(`${what}: user, group and extra value leave as their UTF-8 bytes, as client-go sends them`, async () => {
      const imp = impersonationOf({ as: user, 'as-groups': [group], 'as-user-extra': { scopes: [extra] } }, 'user "u"');
      const client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }), { headers: impersonationHeaders(imp) });
      const before = seen.length;
      assert.equal((await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 })).status, 200);
      assert.equal(seen.length, before + 1);
      const headers = seen.at(-1)!;
      assert.equal(utf8(headers['impersonate-user']?.[0]), user);
      assert.equal(utf8(headers['impersonate-group']?.[0]), group);
      assert.equal(utf8(headers['impersonate-extra-scopes']?.[0]), extra);
    });
  }

  it('ASCII names go out unchanged (the control case)', async () => {
    const client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }), { headers: impersonationHeaders(impersonationOf({ as: 'jose', 'as-groups': ['team'] }, 'user "u"')) });
    assert.equal((await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 })).status, 200);
    assert.deepEqual([seen.at(-1)!['impersonate-user'], seen.at(-1)!['impersonate-group']], [['jose'], ['team']]);
  });
});
