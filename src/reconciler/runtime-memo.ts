// Trainer's runtime snapshots, remembered per TrainJob so that a reconcile does not read the same
// ConfigMap again and again. Trainer v2.3.0 writes `<trainjob>-runtime-snapshot` once, when none
// exists, and builds every later JobSet of that TrainJob from it (createRuntimeSnapshot, "Callers
// must only invoke this when no snapshot exists", github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/
// core/snapshot.go:97-100; NewObjects reads it first, clustertrainingruntime.go:62). Only a read
// from a snapshot is remembered (a runtime read without one may still change), keyed by the
// TrainJob's key and checked against its uid; the rebuild's live read before a delete reads it
// again (reconcile.ts), so a hand-edited snapshot never decides a delete.
//
// Equal snapshots are one read: every TrainJob of a runtime (at one version of it) has a snapshot
// of the same text, and a parsed torchtune runtime is ~7.5 KiB of heap (bench:cache), so 10,000
// TrainJobs of one runtime held ~75 MiB of copies. The shared read is a frozen copy (the caller's
// own read stays as it is); the memo drops it with its last TrainJob.
import type { RuntimeRead } from '../rebuild/decision.ts';
import { deepFreeze } from '../cluster/stored-object.ts';

/** One snapshot's read, and how many TrainJobs it is remembered for. */
interface Shared {
  text: string;
  read: RuntimeRead;
  users: number;
}

export class RuntimeMemo {
  readonly #byKey = new Map<string, { uid: string; shared: Shared }>();
  readonly #byText = new Map<string, Shared>();

  get(key: string, uid: string | undefined): RuntimeRead | undefined {
    const hit = this.#byKey.get(key);
    return hit && uid && hit.uid === uid ? hit.shared.read : undefined;
  }

  /**
   * Remembers a read from a snapshot; any other read forgets the key. The read get() just gave
   * (the reconcile sets what it used) is already held: kept as it is, not serialized again.
   */
  set(key: string, uid: string | undefined, read: RuntimeRead): void {
    const hit = this.#byKey.get(key);
    if (hit && uid && hit.uid === uid && hit.shared.read === read) return;
    this.forget(key);
    if (!read.found || !read.snapshot || !uid) return;
    const text = JSON.stringify(read.runtime);
    let shared = this.#byText.get(text);
    if (!shared) this.#byText.set(text, (shared = { text, read: deepFreeze(structuredClone(read)), users: 0 }));
    shared.users++;
    this.#byKey.set(key, { uid, shared });
  }

  forget(key: string): void {
    const hit = this.#byKey.get(key);
    if (!hit) return;
    this.#byKey.delete(key);
    if (--hit.shared.users === 0) this.#byText.delete(hit.shared.text);
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** Distinct snapshots held. */
  get distinct(): number {
    return this.#byText.size;
  }
}
