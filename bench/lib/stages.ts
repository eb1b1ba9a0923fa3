// The time breakdown of bench/apiserver.bench.ts: sums read from two scrapes of Prometheus text (the
// webhook's per-stage series, src/observability/admission-stages.ts, and the API server's webhook
// call duration), turned into mean µs per call over the measured block.
import { ADMISSION_STAGES, type AdmissionStage } from '../../src/observability/admission-stages.ts';

/** Sum of every sample of `name` whose labels match `labels` (a line's `{...}` part), in Prometheus text. */
export function sumOf(text: string, name: string, labels: RegExp = /.*/): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    const braces = rest[0] === '{' ? rest.slice(0, rest.indexOf('}') + 1) : '';
    if (!labels.test(braces)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

export interface Scrape {
  /** The API server's /metrics. */
  apiServer: string;
  /** The webhook's /metrics, when it is ours. */
  webhook?: string;
}

const VALIDATING = /type="validating"/;
const CALL = 'apiserver_admission_webhook_admission_duration_seconds';

/** Mean µs per webhook call of each stage between two scrapes; undefined where nothing was counted. */
export function breakdown(
  before: Scrape,
  after: Scrape,
): Record<'call' | 'outside' | AdmissionStage, number | undefined> {
  const delta = (text: (s: Scrape) => string | undefined, name: string, labels?: RegExp) => {
    const a = text(after);
    const b = text(before);
    return a === undefined || b === undefined ? undefined : sumOf(a, name, labels) - sumOf(b, name, labels);
  };
  const calls = delta((s) => s.apiServer, `${CALL}_count`, VALIDATING) ?? 0;
  const callSeconds = delta((s) => s.apiServer, `${CALL}_sum`, VALIDATING) ?? 0;
  const perCall = (seconds: number | undefined) =>
    seconds === undefined || calls === 0 ? undefined : (seconds / calls) * 1e6;
  const out = { call: perCall(callSeconds) } as Record<'call' | 'outside' | AdmissionStage, number | undefined>;
  let inside = 0;
  for (const stage of ADMISSION_STAGES) {
    const seconds = delta(
      (s) => s.webhook,
      'trainjob_webhook_admission_stage_seconds_total',
      new RegExp(`stage="${stage}"`),
    );
    out[stage] = perCall(seconds);
    // The laps add up to the time inside; `reads` and each read's time overlap them.
    if (!stage.startsWith('read') || stage === 'read') inside += out[stage] ?? 0;
  }
  out.outside = before.webhook === undefined || out.call === undefined ? undefined : out.call - inside;
  return out;
}
