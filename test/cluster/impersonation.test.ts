// Impersonation from a kubeconfig user, sent as client-go's impersonating round tripper sends it
// (k8s.io/client-go/transport/round_trippers.go): the header names, the extra keys' escaping (UTF-8
// bytes, '%'), their case (the API server lowercases them), and the requests that carry them on the
// direct path, over TLS and plain HTTP alike (clientcmd sets Impersonate before its "only if we are
// secure" block).
//
// A name outside ASCII leaves as its UTF-8 bytes, as client-go writes them (net/http accepts
// obs-text) and the API server reads them back: user names and groups from OIDC and the like are
// UTF-8. Node encodes a header value as Latin-1, so "josé" would leave as the byte 0xE9 (the API
// server then impersonates "jos\xE9", another user, or none), and a character past U+00FF
// ("ユーザー", "Zoë Łukasz") would make Node throw "Invalid character in header content" on every
// request.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { apiClient } from '../../src/cluster/api-request.ts';
import { directConnection } from '../../src/cluster/connection.ts';
import { headerKeyEscape, impersonationHeaders, impersonationOf } from '../../src/cluster/impersonation.ts';
import { listen } from './support/loopback.ts';

/** A header as its bytes were sent, read as UTF-8 (Node's server reads header bytes as Latin-1). */
const utf8 = (latin1: string | undefined) =>
  latin1 === undefined ? undefined : Buffer.from(latin1, 'latin1').toString('utf8');

describe('headerKeyEscape (client-go)', () => {
  const cases: [string, string][] = [
    ['scopes', 'scopes'],
    ['example.com/team', 'example.com%2Fteam'],
    ['a b', 'a%20b'],
    ['100%', '100%25'],
    ['ünï', '%C3%BCn%C3%AF'],
    ["!#$&'*+-.^_`|~", "!#$&'*+-.^_`|~"],
    ['a:b;c=d', 'a%3Ab%3Bc%3Dd'],
  ];
  for (const [key, escaped] of cases)
    it(`${JSON.stringify(key)} → ${escaped}`, () => assert.equal(headerKeyEscape(key), escaped));
});

describe('impersonationOf and impersonationHeaders', () => {
  it('no impersonation: no headers', () => {
    assert.equal(impersonationOf({ token: 't' }, 'user "u"'), undefined);
    assert.deepEqual(impersonationHeaders(undefined), {});
  });
  it('user, uid, each group and each extra value', () => {
    const imp = impersonationOf(
      {
        as: 'bob',
        'as-uid': '42',
        'as-groups': ['a', 'b'],
        'as-user-extra': { scopes: ['x', 'y'], 'example.com/team': ['z'], empty: [] },
      },
      'user "u"',
    );
    assert.deepEqual(impersonationHeaders(imp), {
      'impersonate-user': 'bob',
      'impersonate-uid': '42',
      'impersonate-group': ['a', 'b'],
      'impersonate-extra-scopes': ['x', 'y'],
      'impersonate-extra-example.com%2Fteam': ['z'],
    });
  });
  it('uid, groups or extra without a user are refused, as clientcmd validateAuthInfo', () => {
    for (const user of [{ 'as-uid': '1' }, { 'as-groups': ['g'] }, { 'as-user-extra': { k: ['v'] } }]) {
      assert.throws(() => impersonationOf(user, 'user "u"'), {
        message: 'requesting uid, groups or user-extra for user "u" without impersonating a user',
      });
    }
  });
  it('values that cannot be header values are refused, not sent', () => {
    assert.throws(() => impersonationOf({ as: 'a\r\nb' }, 'user "u"'), /user "u"\.as holds a control character/);
    assert.throws(
      () => impersonationOf({ as: 'a', 'as-groups': ['ok', 7] }, 'user "u"'),
      /as-groups\[1\] must be a string/,
    );
    assert.throws(
      () => impersonationOf({ as: 'a', 'as-user-extra': ['v'] }, 'user "u"'),
      /as-user-extra must be a mapping of lists/,
    );
  });
});

describe('impersonation on the wire (direct path)', () => {
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

  it('each group is its own header line; sent over plain HTTP too (clientcmd sets impersonation outside the TLS-only credentials), the token not', async () => {
    const imp = impersonationOf({ as: 'bob', 'as-groups': ['a', 'b, c'] }, 'user "u"');
    const client = apiClient(directConnection({ server: url, token: 'secret', insecureSkipTlsVerify: false }), {
      headers: impersonationHeaders(imp),
    });
    assert.equal(
      (await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 })).status,
      200,
    );
    const headers = seen.at(-1)!;
    assert.deepEqual(headers['impersonate-user'], ['bob']);
    assert.deepEqual(headers['impersonate-group'], ['a', 'b, c'], 'two header lines: a group may hold a comma');
    assert.equal(headers.authorization, undefined);
  });

  const cases: [string, string, string, string][] = [
    ['Latin-1 (sent as one byte each, another name)', 'josé', 'équipe', 'réglage'],
    ['past U+00FF (every call throws)', 'ユーザー', 'Łódź-team', '値'],
  ];
  for (const [what, user, group, extra] of cases) {
    it(`a name outside ASCII, ${what}: user, group and extra value leave as their UTF-8 bytes, as client-go sends them`, async () => {
      const imp = impersonationOf({ as: user, 'as-groups': [group], 'as-user-extra': { scopes: [extra] } }, 'user "u"');
      const client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }), {
        headers: impersonationHeaders(imp),
      });
      const before = seen.length;
      assert.equal(
        (await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 })).status,
        200,
      );
      assert.equal(seen.length, before + 1);
      const headers = seen.at(-1)!;
      assert.equal(utf8(headers['impersonate-user']?.[0]), user);
      assert.equal(utf8(headers['impersonate-group']?.[0]), group);
      assert.equal(utf8(headers['impersonate-extra-scopes']?.[0]), extra);
    });
  }

  it('ASCII names go out unchanged (the control case)', async () => {
    const client = apiClient(directConnection({ server: url, insecureSkipTlsVerify: false }), {
      headers: impersonationHeaders(impersonationOf({ as: 'jose', 'as-groups': ['team'] }, 'user "u"')),
    });
    assert.equal(
      (await client.request('/version', { signal: AbortSignal.timeout(10_000), maxBytes: 1024 })).status,
      200,
    );
    assert.deepEqual([seen.at(-1)!['impersonate-user'], seen.at(-1)!['impersonate-group']], [['jose'], ['team']]);
  });
});
