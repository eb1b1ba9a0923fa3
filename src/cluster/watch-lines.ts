// Splits a watch's body (newline-delimited JSON events) into lines, however the chunks fall,
// holding at most `maxLineBytes` of an unfinished line: a longer one is refused, not buffered.

export interface LineSplitter {
  /** False when the unfinished line grew past the limit: the stream should end. */
  push(chunk: Buffer): boolean;
}

export function lineSplitter(maxLineBytes: number, onLine: (line: string) => void): LineSplitter {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  return {
    push(chunk) {
      let start = 0;
      for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
        const part = chunk.subarray(start, nl);
        if (pendingBytes + part.length > maxLineBytes) return false;
        const line = pendingBytes === 0 ? part : Buffer.concat([...pending, part], pendingBytes + part.length);
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        const text = line.toString('utf8').trim();
        if (text !== '') onLine(text);
      }
      const rest = chunk.subarray(start);
      if (rest.length === 0) return true;
      pendingBytes += rest.length;
      if (pendingBytes > maxLineBytes) return false;
      pending.push(rest);
      return true;
    },
  };
}
