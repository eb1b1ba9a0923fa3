// Where an admission request's time goes inside the webhook, summed per stage so that a benchmark
// (bench/apiserver.bench.ts) can break the API server's webhook call down in µs from two scrapes
// of /metrics. Each request's stages are laps of one clock kept per request (a WeakMap entry from
// the route's onRequest hook to its onResponse), summed in plain numbers and turned into series
// only at scrape time: a prom-client inc per stage and request would cost more than it measures.
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';

/**
 * The stages, in the order a request passes them:
 * - receive: from the request's headers to the handler (the body read off TLS, Fastify's
 *   lifecycle, the lossless JSON parse, the body budget);
 * - envelope: the AdmissionReview's fields checked and taken out;
 * - decide: the rule table, the CRD's schema and rules (the handler's time less `read`);
 * - read: how long the answer waited on the cluster reads of a numNodes change beyond the decision
 *   (the reads start before the decision, src/rules/validator.ts);
 * - answer: the AdmissionReview answer built, counted and logged;
 * - send: Fastify's send path (serialization, the TLS write) until the response finished.
 * `reads` is the reads' own wall time, overlapping `decide`: not a lap; `read-jobset`, `read-runtime`,
 * `read-lease` (only when it was GET, not watched) and `read-jobs` are each read's wall time within it.
 */
export const ADMISSION_STAGES = [
  'receive',
  'envelope',
  'decide',
  'read',
  'answer',
  'send',
  'reads',
  'read-jobset',
  'read-runtime',
  'read-lease',
  'read-jobs',
] as const;
export type AdmissionStage = (typeof ADMISSION_STAGES)[number];

export class AdmissionStages {
  private readonly seconds = new Float64Array(ADMISSION_STAGES.length);
  private readonly counts = new Float64Array(ADMISSION_STAGES.length);
  /** Per request in flight: when its last lap ended (performance.now()). */
  private readonly marks = new WeakMap<object, number>();

  constructor(registers: Registry[]) {
    const sums = this.seconds;
    const counts = this.counts;
    const fill = (counter: Counter<'stage'>, from: Float64Array) => {
      counter.reset();
      ADMISSION_STAGES.forEach((stage, i) => counter.inc({ stage }, from[i]));
    };
    new Counter({
      name: 'trainjob_webhook_admission_stage_seconds_total',
      help: 'Time spent by admission requests in each stage inside the webhook (receive, envelope, decide, read, answer, send; reads: the cluster reads wall time, overlapping decide).',
      labelNames: ['stage'] as const,
      registers,
      collect() {
        fill(this, sums);
      },
    });
    new Counter({
      name: 'trainjob_webhook_admission_stage_total',
      help: 'Admission requests that passed each stage (read and reads: only numNodes changes judged against the cluster).',
      labelNames: ['stage'] as const,
      registers,
      collect() {
        fill(this, counts);
      },
    });
  }

  /** Starts a request's clock (its onRequest). */
  begin(request: object, at: number): void {
    this.marks.set(request, at);
  }

  /** Ends the lap of `stage` for `request` now; nothing when its clock was not started. */
  lap(request: object, stage: AdmissionStage, now = performance.now()): void {
    const at = this.marks.get(request);
    if (at === undefined) return;
    this.marks.set(request, now);
    this.add(stage, now - at);
  }

  /** Ends a lap that waited `waitedMs` on `waited` within it: that to `waited`, the rest to `stage`. */
  split(request: object, stage: AdmissionStage, waited: AdmissionStage, waitedMs: number | undefined): void {
    const at = this.marks.get(request);
    if (at === undefined) return;
    const now = performance.now();
    this.marks.set(request, now);
    const wait = waitedMs === undefined ? 0 : Math.min(Math.max(waitedMs, 0), now - at);
    this.add(stage, now - at - wait);
    if (waitedMs !== undefined) this.add(waited, wait);
  }

  /** The last lap, `send`, ends the request's clock. */
  end(request: object, now = performance.now()): void {
    this.lap(request, 'send', now);
    this.marks.delete(request);
  }

  /** Adds a measured span (milliseconds) to a stage. */
  add(stage: AdmissionStage, ms: number): void {
    const i = ADMISSION_STAGES.indexOf(stage);
    this.seconds[i] += ms / 1000;
    this.counts[i] += 1;
  }
}
