// proxy-url credentials as Go's url.Parse takes them: each %XX a byte, a bad escape an error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { percentDecodedBytes, proxyAuthorization, proxyCredentialsProblem } from '../../src/cluster/proxy-credentials.ts';

describe('percentDecodedBytes', () => {
  const cases: [string, number[] | undefined][] = [
    ['plain', [...Buffer.from('plain')]],
    ['p%C3%A9', [0x70, 0xc3, 0xa9]],
    ['p%E9ss', [0x70, 0xe9, 0x73, 0x73]],
    ['%ff', [0xff]],
    ['é', [0xc3, 0xa9]],
    ['%zz', undefined],
    ['50%', undefined],
    ['%4', undefined],
    ['', []],
  ];
  for (const [input, bytes] of cases) it(JSON.stringify(input), () => assert.deepEqual(percentDecodedBytes(input) && [...percentDecodedBytes(input)!], bytes));
});

describe('proxyCredentialsProblem and proxyAuthorization', () => {
  it('an HTTP proxy: any valid escape is fine, and its bytes are sent', () => {
    const proxy = new URL('http://us%65r:p%E9ss@proxy:3128');
    assert.equal(proxyCredentialsProblem(proxy), undefined);
    assert.equal(proxyAuthorization(proxy), `Basic ${Buffer.from([...Buffer.from('user:p'), 0xe9, ...Buffer.from('ss')]).toString('base64')}`);
  });
  it('no credentials: no header', () => assert.equal(proxyAuthorization(new URL('http://proxy:3128')), undefined));
  it('a bad escape is refused', () => assert.equal(proxyCredentialsProblem(new URL('http://user:p%zz@proxy:3128')), 'proxy-url has an invalid URL escape in its credentials'));
  it('a SOCKS proxy needs UTF-8 credentials (socks-proxy-agent decodes them as text)', () => {
    assert.equal(proxyCredentialsProblem(new URL('socks5://user:p%C3%A9@proxy:1080')), undefined);
    assert.equal(proxyCredentialsProblem(new URL('socks5://user:p%E9@proxy:1080')), 'proxy-url: the credentials of a SOCKS proxy must be UTF-8');
  });
});
