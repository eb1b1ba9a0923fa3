// A run-time cost budget like the API server's: every evaluated expression node costs 1, string
// scans cost by length; a rule that exceeds its budget stops with CostLimitError.

/** The API server's limits (k8s.io/apiserver/pkg/apis/cel/config.go). */
export const PER_CALL_COST_LIMIT = 1_000_000;
export const PER_OBJECT_COST_BUDGET = 10_000_000;

export class CostLimitError extends Error {
  constructor(limit: number) {
    super(`operation cancelled: actual cost limit exceeded (limit ${limit})`);
  }
}

export class CostMeter {
  used = 0;
  #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  add(cost: number): void {
    this.used += cost;
    if (this.used > this.#limit) throw new CostLimitError(this.#limit);
  }
}

/** The meter of the evaluation in progress; evaluation is synchronous, so one slot suffices. */
let current: CostMeter | undefined;

export function charge(cost: number): void {
  current?.add(cost);
}

export function withMeter<T>(meter: CostMeter, run: () => T): T {
  const previous = current;
  current = meter;
  try {
    return run();
  } finally {
    current = previous;
  }
}
