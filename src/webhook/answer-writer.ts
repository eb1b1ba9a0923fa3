// Answers go out in slices. A whole answer handed to the socket at once is encrypted whole into
// the TLS write queue, which keeps it until the client reads it: answers of ~12 MB (a 7 MiB uid
// is echoed, a denial quotes its bad values) to slow readers held over 200 MiB of TLS buffers.
// Written a slice at a time, with the stream's backpressure, a connection holds the answer's
// text and about one slice in flight.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** The largest answer written in one piece, and the size of each slice of a larger one. */
export const ANSWER_SLICE_CHARS = 64 * 1024;

export function sendJson(reply: FastifyReply, value: unknown): FastifyReply {
  const text = JSON.stringify(value);
  if (text.length <= ANSWER_SLICE_CHARS) return reply.type('application/json; charset=utf-8').send(text);
  return reply
    .type('application/json; charset=utf-8')
    .header('content-length', Buffer.byteLength(text))
    .send(Readable.from(slices(text), { objectMode: false, highWaterMark: ANSWER_SLICE_CHARS }));
}

/** UTF-8 slices of the text; a slice never ends between the two halves of a surrogate pair. */
function* slices(text: string): Generator<Buffer> {
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + ANSWER_SLICE_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield Buffer.from(text.slice(at, end));
    at = end;
  }
}
