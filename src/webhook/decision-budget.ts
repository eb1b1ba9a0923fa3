// A bound on what the decisions under way hold at once. The byte budget (body-budget.ts) bounds
// the bodies being read, but what a decision holds grows with the values a body has, not its
// bytes: a 0.9 MiB list of 300,000 `{}` held ~65 MB while decided (~110 B a value; 2.9 MiB of
// them exhausted a 256 MiB heap on its own). Each body is weighed once it is read, before it is
// parsed (its bytes plus DECISION_BYTES_PER_TOKEN per value, from json/nesting-scan.ts), and its
// weight is held until its response is done.
//   - heavier than the budget less its reserve: 413, it can never be decided here;
//   - a heavy body (over LIGHT_WEIGHT) that does not fit under the reserve waits its turn (first
//     come, first served) when the byte budget holds its bytes (a large body: what waits is
//     bounded there), else it is shed: 429, Retry-After: 1 (a small body of many values: any
//     number of connections could hold such bodies waiting);
//   - a light body (every real TrainJob review) may use the reserve too, and is never queued
//     behind heavy ones; 429 only when the whole budget is full.
// Under failurePolicy: Fail the API server refuses the write on a 413 or 429 (docs/security.md,
// "Hostile traffic: what bounds the webhook"): a flood can delay or refuse writes, never admit one.
import type { ServerResponse } from 'node:http';

/** What the decisions under way may hold at once, by weight. */
export const DECISION_BUDGET_BYTES = 128 * 1024 * 1024;
/** Kept for light requests: heavy ones may fill only the rest. */
export const LIGHT_RESERVE_BYTES = 16 * 1024 * 1024;
/** A body weighing no more than this is light (a real TrainJob review weighs a few hundred KiB). */
export const LIGHT_WEIGHT = 1024 * 1024;
/**
 * The weight of one value (bracket, comma or colon). Measured (bench/history/2026-12-03-issue-18.md,
 * "Hostile flood"): the worst shape, a list of empty objects in a typed field, held ~110 B a value at
 * its peak.
 */
export const DECISION_BYTES_PER_TOKEN = 128;

export function decisionWeight(bytes: number, tokens: number): number {
  return bytes + DECISION_BYTES_PER_TOKEN * tokens;
}

export class DecisionRefused extends Error {
  override name = 'DecisionRefused';
  readonly statusCode: 413 | 429;
  constructor(statusCode: 413 | 429, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export class DecisionBudget {
  readonly capacity: number;
  readonly reserve: number;
  #used = 0;
  readonly #waiting: Array<{ weight: number; granted: () => void }> = [];

  constructor(capacity = DECISION_BUDGET_BYTES, reserve = LIGHT_RESERVE_BYTES) {
    this.capacity = capacity;
    this.reserve = reserve;
  }

  get used(): number {
    return this.#used;
  }

  /** Heavy bodies waiting for room. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Takes `weight`: undefined once taken (at once, or `granted` is called later when `mayWait`
   * and the body is heavy), else why not. The caller gives it back (once) with `give`.
   */
  take(weight: number, mayWait: boolean, granted: () => void): DecisionRefused | 'waiting' | undefined {
    const heavyRoom = this.capacity - this.reserve;
    if (weight > heavyRoom) {
      return new DecisionRefused(
        413,
        `request body is too heavy to decide: its estimated decision memory (${weight} bytes: its bytes and ${DECISION_BYTES_PER_TOKEN} a value) exceeds the ${heavyRoom} one request may hold`,
      );
    }
    const heavy = weight > LIGHT_WEIGHT;
    if (this.#fits(weight, heavy) && !(heavy && this.#waiting.length > 0)) {
      this.#take(weight);
      return undefined;
    }
    if (heavy && mayWait) {
      this.#waiting.push({ weight, granted });
      return 'waiting';
    }
    return new DecisionRefused(429, 'the webhook is deciding as much as its memory allows: retry in a second');
  }

  /**
   * Takes back a wait whose client has gone (`granted` as passed to `take`): true when it was
   * still waiting. A wait holds its body's text, and the byte budget lets go of that body once its
   * response closes: left queued, bodies sent and abandoned one after another piled up without
   * bound behind one slow reader.
   */
  withdraw(granted: () => void): boolean {
    const at = this.#waiting.findIndex((w) => w.granted === granted);
    if (at === -1) return false;
    this.#waiting.splice(at, 1);
    // Those behind it may fit now.
    this.#grantWaiting();
    return true;
  }

  give(weight: number): void {
    this.#used -= weight;
    this.#grantWaiting();
  }

  /** First come, first served. */
  #grantWaiting(): void {
    while (this.#waiting.length > 0 && this.#fits(this.#waiting[0].weight, true)) {
      const next = this.#waiting.shift()!;
      this.#take(next.weight);
      next.granted();
    }
  }

  #fits(weight: number, heavy: boolean): boolean {
    return this.#used + weight <= (heavy ? this.capacity - this.reserve : this.capacity);
  }

  #take(weight: number): void {
    this.#used += weight;
  }
}

/**
 * What waits on a count change's cluster reads may weigh together: as much as the room kept for
 * light bodies. Apart from the decision budget, so that count changes waiting on a slow API
 * server (or forged ones, as anyone who reaches the port can send) hold none of it: past this
 * they are refused for now (503), and a write that needs no read is never refused for them.
 */
export const COUNT_CHANGE_READS_BYTES = LIGHT_RESERVE_BYTES;

/** The budget for what waits on count-change reads: no reserve, nothing queued. */
export function countChangeReadsBudget(capacity = COUNT_CHANGE_READS_BYTES): DecisionBudget {
  return new DecisionBudget(capacity, 0);
}

const held = Symbol('held');
interface Hold {
  budget: DecisionBudget;
  weight: number;
}
type HoldingResponse = ServerResponse & { [held]?: Hold };

/** Holds `weight` of `budget` until `res` is done (sent, or its client gone), by one shared listener. */
export function holdUntilDone(budget: DecisionBudget, res: ServerResponse, weight: number): void {
  const holding = res as HoldingResponse;
  if (res.writableFinished || res.destroyed) return budget.give(weight);
  const hold = holding[held];
  if (hold?.budget === budget) hold.weight += weight;
  else if (hold) res.once('close', () => budget.give(weight));
  else {
    holding[held] = { budget, weight };
    res.once('close', () => giveBack(holding));
  }
}

/**
 * Moves what `res` holds (holdUntilDone) to `to`, if `to` has room for it now: false when not, and
 * nothing moves. False too when `res` is done (its client gone, or answered): what it held is
 * given back already, so reads started for it would be bounded by no budget, and no one waits for
 * their answer. A hold heavier than all of `to` could never move, and a retry would meet the same
 * refusal for ever: it stays where it is (true), on the budget that admitted it, which keeps its
 * room for light writes, so such a rare large count change is judged at the cost of delaying other
 * heavy writes, never light ones.
 */
export function moveHeld(res: ServerResponse, to: DecisionBudget): boolean {
  if (res.destroyed || res.writableEnded) return false;
  const hold = (res as HoldingResponse)[held];
  if (!hold || hold.budget === to) return true;
  if (hold.weight > to.capacity) return true;
  if (to.take(hold.weight, false, noWait) !== undefined) return false;
  const from = hold.budget;
  hold.budget = to;
  from.give(hold.weight);
  return true;
}

const noWait = (): void => {};

function giveBack(res: HoldingResponse): void {
  const hold = res[held];
  if (hold === undefined) return;
  res[held] = undefined;
  hold.budget.give(hold.weight);
}
