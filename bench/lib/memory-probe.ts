// Preloaded with `--import` into a process under measure (bench/empty-reconciler.bench.ts): every
// second it writes to the file TJW_MEMORY_PROBE what the process holds, as JSON: process.memoryUsage(),
// V8's heap spaces and code statistics, and Node's own modules loaded so far, in load order
// (process.moduleLoadList). No load hook: a hook makes Node keep every module's source (tens of
// MiB). Its own cost (a timer, a write a second) is the same in every process it measures.
import { writeFileSync } from 'node:fs';
import { getHeapCodeStatistics, getHeapSpaceStatistics } from 'node:v8';

export interface ProbeReading {
  memory: NodeJS.MemoryUsage;
  spaces: { name: string; size: number; used: number }[];
  code: { codeAndMetadata: number; bytecodeAndMetadata: number; sourceText: number };
  /** `NativeModule <id>` and `Internal Binding <id>` lines, in the order Node loaded them. */
  builtins: string[];
}

const out = process.env.TJW_MEMORY_PROBE;
if (out) {
  const write = () => {
    const code = getHeapCodeStatistics();
    const reading: ProbeReading = {
      memory: process.memoryUsage(),
      spaces: getHeapSpaceStatistics().map((s) => ({
        name: s.space_name,
        size: s.space_size,
        used: s.space_used_size,
      })),
      code: {
        codeAndMetadata: code.code_and_metadata_size,
        bytecodeAndMetadata: code.bytecode_and_metadata_size,
        sourceText: code.external_script_source_size,
      },
      builtins: (process as unknown as { moduleLoadList: string[] }).moduleLoadList,
    };
    writeFileSync(out, JSON.stringify(reading));
  };
  setInterval(write, 1000).unref();
}
