// `trainjob-webhook serve` as a real process for the fault suites (slow clients, certificate swaps,
// SIGTERM under load), and a client that talks to it the way the API server does: HTTPS, keep-alive
// connections, one AdmissionReview per request with its own uid.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:https';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { review } from '../webhook/fixtures.ts';
import { VALIDATE } from './support.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(root, 'bin/trainjob-webhook.js');
export const UPSTREAM_CRD = path.join(root, 'upstream/crds/trainer.kubeflow.org_trainjobs.yaml');

export type LogLine = Record<string, unknown> & { msg?: string };

export interface ServeProcess {
  child: ChildProcess;
  port: number;
  lines: LogLine[];
  /** Resolves with the first log line whose msg matches (already logged or still to come). */
  logged(msg: RegExp): Promise<LogLine>;
  /** Settles once the process has exited and its output has been read to the end. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The uids of the admission requests the process logged as decided. */
  decidedUids(): Set<string>;
}

/** Starts `serve --port 0 --ops-port 0 --host 127.0.0.1 <args>` in `cwd` and waits for `serving`. */
export async function startServeProcess(args: string[], cwd: string): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--ops-port', '0', '--host', '127.0.0.1', '--offline', ...args],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal })),
  );
  const lines: LogLine[] = [];
  const waiters: Array<() => void> = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      return;
    }
    for (const w of waiters.splice(0)) w();
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
    for (const w of waiters.splice(0)) w();
  });
  const logged = async (msg: RegExp): Promise<LogLine> => {
    for (;;) {
      const line = lines.find((l) => msg.test(String(l.msg)));
      if (line) return line;
      if (gone) throw new Error(`serve exited before logging ${msg}; stderr: ${stderr.slice(-2000)}`);
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  const serving = await logged(/^serving$/);
  return {
    child,
    port: Number(new URL(String(serving.admission)).port),
    lines,
    logged,
    exited,
    decidedUids: () => new Set(lines.filter((l) => l.msg === 'admission').map((l) => String(l.reqId))),
  };
}

export interface Answered {
  ok: true;
  status: number;
  uid: string | undefined;
  /** Whether the request went out on a connection that had carried one before. */
  reused: boolean;
}

export interface Failed {
  ok: false;
  code: string;
  message: string;
  reused: boolean;
  /** Whether the connection had completed its TLS handshake (the server process had accepted it). */
  handshaken: boolean;
}

export interface ClientOptions {
  port: number;
  /** Trust this CA and check the name (default: no verification). */
  ca?: string | Buffer;
  /** Keep connections for reuse, as the API server's transport does (default true). */
  keepAlive?: boolean;
  maxSockets?: number;
}

/** An HTTPS client with its own connection pool; each send is one AdmissionReview with `uid`. */
export function admissionClient(opts: ClientOptions) {
  const agent = new Agent({
    keepAlive: opts.keepAlive ?? true,
    maxSockets: opts.maxSockets ?? 4,
    ca: opts.ca,
    rejectUnauthorized: opts.ca !== undefined,
    servername: 'localhost',
  });
  const used = new WeakSet<object>();
  const send = (uid: string, operation = 'UPDATE'): Promise<Answered | Failed> =>
    new Promise((resolve) => {
      const body = JSON.stringify(review(operation, { uid }));
      let reused = false;
      let handshaken = false;
      const req = request(
        {
          host: '127.0.0.1',
          port: opts.port,
          path: VALIDATE,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          timeout: 30_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            let answeredUid: string | undefined;
            try {
              answeredUid = JSON.parse(text).response?.uid;
            } catch {
              answeredUid = undefined;
            }
            resolve({ ok: true, status: res.statusCode ?? 0, uid: answeredUid, reused });
          });
          res.on('error', (err: NodeJS.ErrnoException) =>
            resolve({ ok: false, code: err.code ?? 'ERR', message: err.message, reused, handshaken: true }),
          );
        },
      );
      req.on('socket', (socket) => {
        reused = used.has(socket);
        used.add(socket);
        // A reused connection finished its handshake long ago; a new one says when it does.
        handshaken = reused;
        if (!handshaken) socket.once('secureConnect', () => (handshaken = true));
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in 30 s'), { code: 'TIMEOUT' })));
      req.on('error', (err: NodeJS.ErrnoException) =>
        resolve({ ok: false, code: err.code ?? 'ERR', message: err.message, reused, handshaken }),
      );
      req.end(body);
    });
  return { send, close: () => agent.destroy() };
}

/**
 * Runs one loop per client that sends reviews until `stop()` (or, for that loop, until a result
 * `stopOn` picks); keeps every result with its uid.
 */
export function load(
  clients: ReturnType<typeof admissionClient>[],
  prefix: string,
  stopOn: (r: Answered | Failed) => boolean = () => false,
) {
  const results: Array<{ uid: string; result: Answered | Failed }> = [];
  let stopping = false;
  let n = 0;
  const loops = clients.map(async (client) => {
    while (!stopping) {
      const uid = `${prefix}-${n++}`;
      const result = await client.send(uid);
      results.push({ uid, result });
      if (stopOn(result)) return;
    }
  });
  return {
    results,
    /** Settles when every loop has ended. */
    done: () => Promise.all(loops).then(() => undefined),
    /** Resolves once at least `count` more results are in. */
    async progress(count: number): Promise<void> {
      const target = results.length + count;
      while (results.length < target && !stopping) await new Promise((r) => setTimeout(r, 10));
    },
    async stop(): Promise<void> {
      stopping = true;
      await Promise.all(loops);
    },
  };
}
