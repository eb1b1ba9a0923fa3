// In-process certificate rotation, after open-policy-agent's cert-controller (what Trainer, JobSet
// and Kueue run): one Secret holds a CA and a serving certificate for the Service; every replica
// checks it at start, on every change of the Secret or a webhook configuration, and every few
// hours; renews what expires within the lookahead; writes the files it serves from; and keeps the
// caBundle of each webhook configuration current. Replicas agree through the Secret's
// resourceVersion: one write wins, the others get 409, re-read and adopt what won.
import type { Logger } from '../observability/logger.ts';
import { assessMaterial, bundleAfterCaRotation, splitPemBundle, type CertMaterial } from './assess.ts';
import { createCa, issueServingCert } from './authority.ts';
import { hasServingFiles, writeServingFiles } from './files.ts';
import { withCaBundle, type WebhookConfigRef } from './inject.ts';
import { ConflictError, type CertStore } from './store.ts';
import { describeError, statusCode } from '../cluster/errors.ts';

export interface RotationSettings {
  /** The names the serving certificate must carry (the Service's DNS name first). */
  hosts: string[];
  webhookConfigs: WebhookConfigRef[];
  /** Where tls.crt, tls.key and ca.crt are written for the server (and its reloader) to read. */
  certDir: string;
  caValidityMs: number;
  servingValidityMs: number;
  lookaheadMs: number;
  checkIntervalMs: number;
}

/** cert-controller's defaults. */
export const ROTATION_DEFAULTS = {
  caValidityMs: 10 * 365 * 86_400_000,
  servingValidityMs: 365 * 86_400_000,
  lookaheadMs: 90 * 86_400_000,
  checkIntervalMs: 12 * 3_600_000,
};

export interface CertRotation {
  /** Resolves once the files are in certDir (retries until then). */
  ready: Promise<void>;
  /** One pass (Secret, files, caBundles); serialized with the others. */
  sync(): Promise<SyncResult>;
  stop(): void;
}

export interface SyncResult {
  /** What this replica did to the Secret. */
  secret: 'created' | 'new-ca' | 'new-serving' | 'kept' | 'adopted';
  filesChanged: boolean;
  injected: string[];
}

const MAX_SECRET_ATTEMPTS = 5;

// eslint-disable-next-line max-lines-per-function -- passes share the run queue, retry backoff and ready promise
export function startCertRotation(
  settings: RotationSettings,
  store: CertStore,
  logger: Logger,
  now: () => Date = () => new Date(),
): CertRotation {
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let retryTimer: NodeJS.Timeout | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let retryMs = 1000;
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));
  const missingReported = new Set<string>();

  async function settleSecret(): Promise<{ material: CertMaterial; action: SyncResult['secret'] }> {
    let lostRace = false;
    for (let attempt = 1; attempt <= MAX_SECRET_ATTEMPTS; attempt++) {
      const stored = await store.readSecret();
      const assessment = assessMaterial(stored?.material ?? {}, {
        hosts: settings.hosts,
        now: now(),
        lookaheadMs: settings.lookaheadMs,
      });
      if (assessment.action === 'keep') return { material: stored!.material, action: lostRace ? 'adopted' : 'kept' };
      const material = await renew(stored?.material ?? {}, assessment.action === 'new-ca');
      try {
        if (stored) await store.replaceSecret(material, stored.resourceVersion);
        else await store.createSecret(material);
      } catch (err) {
        if (err instanceof ConflictError) {
          // Another replica wrote first: read what it wrote and adopt it (never write over it).
          logger.info(
            { reason: assessment.reason },
            'another replica updated the certificate Secret first; adopting its certificates',
          );
          lostRace = true;
          continue;
        }
        if (!stored && statusCode(err) === 403)
          throw new Error(
            `the certificate Secret does not exist and cannot be created (${describeError(err)}): apply the manifests' Secret or allow create`,
            { cause: err },
          );
        throw err;
      }
      const action = !stored ? 'created' : assessment.action;
      logger.info(
        { action, reason: assessment.reason },
        action === 'new-serving'
          ? 'serving certificate renewed in the Secret'
          : 'CA and serving certificate written to the Secret',
      );
      return { material, action };
    }
    throw new Error(`the certificate Secret changed under every one of ${MAX_SECRET_ATTEMPTS} attempts`);
  }

  async function renew(old: CertMaterial, newCa: boolean): Promise<CertMaterial> {
    const at = now();
    if (newCa) {
      const ca = await createCa({ now: at, validityMs: settings.caValidityMs });
      const serving = await issueServingCert(ca, settings.hosts, { now: at, validityMs: settings.servingValidityMs });
      return {
        caCrt: bundleAfterCaRotation(ca.certPem, old.caCrt, at),
        caKey: ca.keyPem,
        tlsCrt: serving.certPem,
        tlsKey: serving.keyPem,
      };
    }
    const signing = { certPem: splitPemBundle(old.caCrt!)[0], keyPem: old.caKey! };
    const serving = await issueServingCert(signing, settings.hosts, {
      now: at,
      validityMs: settings.servingValidityMs,
    });
    return { ...old, tlsCrt: serving.certPem, tlsKey: serving.keyPem };
  }

  async function inject(bundle: string): Promise<string[]> {
    const injected: string[] = [];
    for (const ref of settings.webhookConfigs) {
      const key = `${ref.kind}/${ref.name}`;
      for (let attempt = 1; ; attempt++) {
        const config = await store.readWebhookConfig(ref);
        if (config === undefined) {
          // Optional ones (the mutating webhook where Trainer's defaulter runs) may be absent.
          if (!missingReported.has(key))
            logger.info(
              { webhookConfiguration: key },
              'webhook configuration not found; its caBundle is set once it exists',
            );
          missingReported.add(key);
          break;
        }
        missingReported.delete(key);
        if ((config as { metadata?: { deletionTimestamp?: string } }).metadata?.deletionTimestamp) break;
        const updated = withCaBundle(config, bundle);
        if (!updated) break;
        try {
          await store.replaceWebhookConfig(ref, updated);
          injected.push(key);
          logger.info({ webhookConfiguration: key }, 'caBundle injected');
          break;
        } catch (err) {
          if (!(err instanceof ConflictError) || attempt >= MAX_SECRET_ATTEMPTS) throw err;
        }
      }
    }
    return injected;
  }

  async function pass(): Promise<SyncResult> {
    const { material, action } = await settleSecret();
    // The caBundle first, then the files: a certificate of a new CA is served only once the API
    // server trusts that CA. When the bundle cannot be written, the certificate being served stays
    // (it is still valid: renewal starts long before expiry), unless there is none yet.
    let injected: string[] = [];
    let injectError: unknown;
    try {
      injected = await inject(material.caCrt!);
    } catch (err) {
      injectError = err;
    }
    let filesChanged = false;
    if (injectError === undefined || !(await hasServingFiles(settings.certDir))) {
      filesChanged = await writeServingFiles(settings.certDir, {
        caCrt: material.caCrt!,
        tlsCrt: material.tlsCrt!,
        tlsKey: material.tlsKey!,
      });
      if (filesChanged) logger.info({ dir: settings.certDir }, 'serving certificate files written');
      resolveReady();
    }
    if (injectError !== undefined) throw injectError;
    return { secret: action, filesChanged, injected };
  }

  function sync(): Promise<SyncResult> {
    const next = running.then(pass, pass);
    running = next.catch(() => undefined);
    return next;
  }

  function trigger(): void {
    if (stopped) return;
    clearTimeout(retryTimer);
    sync().then(
      () => {
        retryMs = 1000;
      },
      (err) => {
        if (stopped) return;
        logger.error({ error: describeError(err), retryInMs: retryMs }, 'certificate rotation failed; retrying');
        retryTimer = setTimeout(trigger, retryMs);
        retryTimer.unref();
        retryMs = Math.min(retryMs * 2, 60_000);
      },
    );
  }

  // Bursts of watch events (our own writes among them) become one pass.
  const onChange = () => {
    clearTimeout(debounce);
    debounce = setTimeout(trigger, 200);
    debounce.unref();
  };
  const stopWatch = store.watch(onChange, (message) => logger.warn(message));
  const interval = setInterval(trigger, settings.checkIntervalMs);
  interval.unref();
  trigger();

  return {
    ready,
    sync,
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
      clearTimeout(debounce);
      clearInterval(interval);
      stopWatch();
    },
  };
}
