/** Why {@link readBoundedBody} stopped reading: the body passed the limit, or it had bytes where none may be. */
export type BodyRefusal = 'too_large' | 'not_empty';

/**
 * Reads a request body into one buffer, never holding more than `limitBytes` (+ one chunk): past the
 * limit, or at the first byte when `refuseAnyByte` (a body the caller will refuse by its type), the
 * stream is canceled and the rest is left unread, so a huge or endless body never takes the
 * process's memory.
 */
export async function readBoundedBody(body: ReadableStream<Uint8Array>, limitBytes: number, refuseAnyByte = false): Promise<{ bytes: Buffer } | { refused: BodyRefusal }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    const refused: BodyRefusal | undefined = refuseAnyByte && size > 0 ? 'not_empty' : size > limitBytes ? 'too_large' : undefined;
    if (refused !== undefined) {
      await reader.cancel().catch(() => undefined);
      return { refused };
    }
    chunks.push(value);
  }
  return { bytes: Buffer.concat(chunks) };
}
