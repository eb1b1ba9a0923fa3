// Polling and small network helpers for waiting on components to come up.
import { request } from 'node:https';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TrackedProcess } from './process.ts';

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Fail fast when this process exits while waiting (with its log tail in the error). */
  process?: TrackedProcess;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` until it returns a value other than undefined/false. Errors thrown by `check`
 * count as "not yet"; the last one is reported on timeout.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  opts: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let last: unknown;
  for (;;) {
    if (opts.process?.exitStatus) {
      const p = opts.process;
      throw new Error(
        `${p.name} exited (code ${p.exitStatus?.code}) while waiting for ${what}; last lines of ${p.logFile}:\n${p.logTail()}`,
      );
    }
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const tail = opts.process ? `\nlast lines of ${opts.process.logFile}:\n${opts.process.logTail()}` : '';
      throw new Error(
        `timed out waiting for ${what}${last ? `: ${String((last as Error).message ?? last)}` : ''}${tail}`,
      );
    }
    await sleep(opts.intervalMs ?? 200);
  }
}

/**
 * The lowest port of the kernel's ephemeral range (the ports bind(0) and every outgoing
 * connection's source port come from). A port chosen inside it can be taken between our check and
 * the listener's bind by any client connection on the machine: CI lost a reconciler that way
 * (`listen EADDRINUSE`). Chosen below it, only another listener could take it.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_CHOSEN + 1000 ? low : 32768;
  } catch {
    return 32768; // Linux's default; other systems: the same range is a fair guess
  }
}

/** Above the fixed ports the components use (etcd 2379, kubelet 10250, controllers' 8080-9443…). */
const LOWEST_CHOSEN = 11000;

function listenOn(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/**
 * Where a chosen port is marked taken for every test process on the machine. The matrix runs two
 * `node --test` processes side by side (hack/test-matrix.ts), each starting components on ports it
 * chose and released; without a mark, the other could choose the same port before the component
 * binds it (`listen EADDRINUSE`, seen in CI as a world that did not start).
 */
export const RESERVATIONS = path.join(tmpdir(), `tjw-port-reservations-${process.getuid?.() ?? 'user'}`);
/** Longer than any component takes to bind the port it was given; after it, a mark is stale. */
const RESERVATION_MS = 5 * 60_000;

/**
 * Marks `port` taken (an exclusive create of its file, holding the pid for whoever looks); false
 * when a mark younger than RESERVATION_MS exists. A stale mark is replaced. Where marks cannot be
 * written (a read-only or foreign directory), true: the choice is then as good as before marks.
 */
export function reserve(port: number, now = Date.now()): boolean {
  const file = path.join(RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        if (!makeDir()) return true;
      } else if (code !== 'EEXIST') return true;
      else if (!removeIfStale(file, now)) return false;
    }
  }
  return false;
}

function makeDir(): boolean {
  try {
    mkdirSync(RESERVATIONS, { recursive: true, mode: 0o700 });
    return true;
  } catch {
    return false;
  }
}

/** Removes a mark older than RESERVATION_MS; false when it is fresh. */
function removeIfStale(file: string, now: number): boolean {
  try {
    if (now - statSync(file).mtimeMs < RESERVATION_MS) return false;
    unlinkSync(file);
  } catch {
    // Another process replaced or removed it first: the caller tries once more.
  }
  return true;
}

/**
 * Ports free on 127.0.0.1 right now, all distinct, chosen at random below the ephemeral range
 * (see ephemeralLow), none chosen by another test process in the last RESERVATION_MS (reserve).
 * Each listener stays open until all are chosen.
 */
export async function freePorts(n: number): Promise<number[]> {
  const high = ephemeralLow() - 1;
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < n; tries++) {
      if (tries > 200 + n * 10) throw new Error(`no ${n} free ports found in ${LOWEST_CHOSEN}-${high}`);
      const port = LOWEST_CHOSEN + Math.floor(Math.random() * (high - LOWEST_CHOSEN + 1));
      const server = await listenOn(port);
      if (!server) continue;
      if (reserve(port)) held.push(server);
      else await new Promise((resolve) => server.close(resolve));
    }
    return held.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

export interface TlsClient {
  ca: string;
  cert?: string;
  key?: string;
}

/** GET over HTTPS; resolves with status and body, rejects on connection errors. */
export function httpsGet(url: string, tls: TlsClient, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', ca: tls.ca, cert: tls.cert, key: tls.key, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** GET over plain HTTP (etcd's client port, the controllers' probe ports). */
export async function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, body: await res.text() };
}
