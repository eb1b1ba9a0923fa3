// Caller authentication on the admission port (`serve --client-ca`), and what a failed TLS
// handshake says. With a client CA the TLS layer itself refuses a caller without a certificate
// that chains to it; what is left here: the optional name check (--client-name), telling which
// requests came over a verified connection, and saying plainly why handshakes fail: configured
// on the webhook's side only, every API server call fails and, under failurePolicy: Fail, every
// TrainJob write is refused. Each failure is counted by reason; the log says it at most once
// per interval, with how many it stood for.
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { Logger } from '../observability/logger.ts';
import type { WebhookMetrics } from '../observability/metrics.ts';

export type HandshakeFailureReason =
  'no_client_certificate' | 'untrusted_client_certificate' | 'client_name_not_allowed' | 'other';

/** How often the log may speak of failed handshakes (each reason on its own clock). */
export const HANDSHAKE_LOG_INTERVAL_MS = 30_000;

const ADVICE: Record<HandshakeFailureReason, string> = {
  no_client_certificate:
    'TLS handshake refused: the caller sent no client certificate and --client-ca requires one. If the caller is the API server, ' +
    "its AdmissionConfiguration's kubeConfigFile gives no client certificate for this webhook's host, and every TrainJob write " +
    'is refused while failurePolicy is Fail (docs/security.md, "Only the API server drives admission")',
  untrusted_client_certificate:
    'TLS handshake refused: the client certificate does not chain to the --client-ca bundle (another CA, expired, or not for client auth)',
  client_name_not_allowed: 'TLS connection closed: the client certificate names none of --client-name',
  other: 'TLS handshake failed',
};

/**
 * Which client CA bundle a connection was verified under. Node verifies a client certificate once,
 * at the handshake; a CA reload (--client-ca re-read) starts a new generation, and a connection
 * verified under an earlier one no longer counts as the API server's: it is closed when idle, or
 * after the response it is sending, so a certificate of a CA just dropped from the bundle cannot
 * keep a kept-alive connection for good.
 */
export class ClientTrust {
  generation = 0;
  private readonly renewed: (() => void)[] = [];
  onRenew(listener: () => void): void {
    this.renewed.push(listener);
  }
  renew(): void {
    this.generation++;
    for (const listener of this.renewed) listener();
  }
}

const VERIFIED_UNDER = Symbol('verifiedUnder');

export interface HandshakeWatchOptions {
  logger: Logger;
  metrics: WebhookMetrics;
  /** --client-name: a verified certificate must carry one of these as its CN or a DNS name. */
  names?: readonly string[];
  /** With --client-ca: each connection is stamped with the trust generation it was verified under. */
  trust?: ClientTrust;
  intervalMs?: number;
  now?: () => number;
}

/** Why a handshake failed: OpenSSL's code for a missing certificate, Node's verify result for an untrusted one. */
export function handshakeFailureReason(err: NodeJS.ErrnoException, socket: TLSSocket): HandshakeFailureReason {
  if (err.code === 'ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE') return 'no_client_certificate';
  // Node completes the handshake, verifies the chain, and with rejectUnauthorized destroys the
  // socket (an ECONNRESET here): authorizationError says why.
  if (socket.authorizationError) return 'untrusted_client_certificate';
  return 'other';
}

/** The certificate's CN and DNS names, as a --client-name list is matched against them. */
export function certificateNames(socket: TLSSocket): string[] {
  const peer = socket.getPeerCertificate();
  const cn = peer.subject?.CN;
  const cns = Array.isArray(cn) ? cn : cn ? [cn] : [];
  const dns = (peer.subjectaltname ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4));
  return [...cns, ...dns];
}

/** Counts and logs failed handshakes; with names, closes verified connections whose certificate names none. */
export function watchHandshakes(server: TlsServer, options: HandshakeWatchOptions): void {
  const { logger, metrics } = options;
  const intervalMs = options.intervalMs ?? HANDSHAKE_LOG_INTERVAL_MS;
  const now = options.now ?? Date.now;
  const clocks = new Map<HandshakeFailureReason, { lastLogged: number; unlogged: number }>();
  // Each reason exported at 0 from the start: increase() in the alert cannot see a series' first
  // sample, so a counter born at 1 (one forged caller, one probe) would never fire it.
  for (const reason of Object.keys(ADVICE) as HandshakeFailureReason[]) metrics.tlsHandshakeFailures.inc({ reason }, 0);

  const failed = (reason: HandshakeFailureReason, socket: TLSSocket, detail: string | undefined) => {
    metrics.tlsHandshakeFailures.inc({ reason });
    const clock = clocks.get(reason) ?? { lastLogged: -Infinity, unlogged: 0 };
    clocks.set(reason, clock);
    clock.unlogged++;
    const t = now();
    if (t - clock.lastLogged < intervalMs) return;
    const fields = {
      reason,
      detail,
      remote: socket.remoteAddress,
      failures: clock.unlogged,
      sinceSeconds: Number.isFinite(clock.lastLogged) ? Math.round((t - clock.lastLogged) / 1000) : undefined,
    };
    clock.lastLogged = t;
    clock.unlogged = 0;
    // A reset or timeout before any TLS (a port scan, a TCP probe) is not worth a warning.
    if (reason === 'other' && !/^ERR_SSL/.test(detail ?? '')) logger.debug(fields, ADVICE.other);
    else logger.warn(fields, ADVICE[reason]);
  };

  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
    const reason = handshakeFailureReason(err, socket);
    failed(reason, socket, reason === 'untrusted_client_certificate' ? String(socket.authorizationError) : err.code);
  });

  const trust = options.trust;
  if (trust) {
    server.prependListener('secureConnection', (socket: TLSSocket) => {
      (socket as TLSSocket & { [VERIFIED_UNDER]?: number })[VERIFIED_UNDER] = trust.generation;
    });
  }

  const names = options.names;
  if (names && names.length > 0) {
    // Before the HTTP server takes the socket: a request sent with the handshake's last flight
    // would otherwise be parsed and answered.
    server.prependListener('secureConnection', (socket: TLSSocket) => {
      const presented = certificateNames(socket);
      if (presented.some((n) => names.includes(n))) return;
      failed('client_name_not_allowed', socket, `certificate names ${presented.join(', ') || 'nothing'}`);
      socket.destroy();
    });
  }
}

/**
 * Whether a request came over a connection whose client certificate was verified (--client-ca),
 * with `trust`: under the client CA bundle in force now.
 */
export function verifiedCaller(socket: unknown, trust?: ClientTrust): boolean {
  const s = socket as (Partial<TLSSocket> & { [VERIFIED_UNDER]?: number }) | null;
  return s?.authorized === true && (!trust || s[VERIFIED_UNDER] === trust.generation);
}
