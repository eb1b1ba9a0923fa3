// A TLS client speaking HTTP/1.1 by hand, so a test decides exactly when each byte goes out
// (shutdown tests write a request on an idle keep-alive connection at a chosen moment).
import { connect, type TLSSocket } from 'node:tls';
import { VALIDATE } from './fixtures.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One TLS connection speaking HTTP/1.1 by hand, so a test decides exactly when each byte goes out. */
export class RawClient {
  readonly socket: TLSSocket;
  #buffer = '';
  #waiters: Array<() => void> = [];
  ended = false;
  error: Error | undefined;

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      this.#wake();
    });
    this.socket.on('end', () => {
      this.ended = true;
      this.#wake();
    });
    this.socket.on('error', (err) => {
      this.error = err;
      this.#wake();
    });
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('secureConnect', () => resolve());
      this.socket.once('error', reject);
    });
  }

  send(body: unknown): void {
    const text = JSON.stringify(body);
    this.socket.write(
      `POST ${VALIDATE} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    );
  }

  /** The next response; fails if the connection ends or breaks first. */
  async response(): Promise<RawResponse> {
    for (;;) {
      const head = this.#buffer.indexOf('\r\n\r\n');
      if (head >= 0) {
        const lines = this.#buffer.slice(0, head).split('\r\n');
        const headers = Object.fromEntries(
          lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        const length = Number(headers['content-length']);
        if (this.#buffer.length >= head + 4 + length) {
          const body = this.#buffer.slice(head + 4, head + 4 + length);
          this.#buffer = this.#buffer.slice(head + 4 + length);
          return { status: Number(lines[0].split(' ')[1]), headers, body };
        }
      }
      if (this.error) throw this.error;
      if (this.ended) throw new Error('connection ended without a (whole) response');
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }

  /** Resolves when the server has closed the connection; says how. */
  closed(): Promise<'end' | 'error'> {
    return new Promise((resolve) => {
      if (this.error) return resolve('error');
      if (this.ended) return resolve('end');
      this.#waiters.push(() => resolve(this.error ? 'error' : 'end'));
    });
  }
}
