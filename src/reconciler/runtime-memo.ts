// Trainer's runtime snapshots, remembered per TrainJob so that a reconcile does not read the same
// ConfigMap again and again. Trainer v2.3.0 writes `<trainjob>-runtime-snapshot` once, when none
// exists, and builds every later JobSet of that TrainJob from it (createRuntimeSnapshot, "Callers
// must only invoke this when no snapshot exists", github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/
// core/snapshot.go:97-100; NewObjects reads it first, clustertrainingruntime.go:62). Only a read
// from a snapshot is remembered (a runtime read without one may still change), keyed by the
// TrainJob's key and checked against its uid; the rebuild's live read before a delete reads it
// again (reconcile.ts), so a hand-edited snapshot never decides a delete.
import type { RuntimeRead } from '../rebuild/decision.ts';

export class RuntimeMemo {
  readonly #byKey = new Map<string, { uid: string; read: RuntimeRead }>();

  get(key: string, uid: string | undefined): RuntimeRead | undefined {
    const hit = this.#byKey.get(key);
    return hit && uid && hit.uid === uid ? hit.read : undefined;
  }

  /** Remembers a read from a snapshot; any other read forgets the key. */
  set(key: string, uid: string | undefined, read: RuntimeRead): void {
    if (read.found && read.snapshot && uid) this.#byKey.set(key, { uid, read });
    else this.#byKey.delete(key);
  }

  forget(key: string): void {
    this.#byKey.delete(key);
  }

  get size(): number {
    return this.#byKey.size;
  }
}
