// Incremental Server-Sent Events parser (the WHATWG event-stream format),
// fed with decoded text chunks from a fetch() body. EventSource cannot send
// an Authorization header, so the relay reads the stream itself.

/** Longest line the parser buffers before it gives up (bytes of text). */
export const MAX_LINE = 64 * 1024 * 1024;

export class SSEParser {
  /**
   * @param {{onEvent: (ev: {type: string, data: string, id: string}) => void,
   *          onComment?: (text: string) => void,
   *          onRetry?: (ms: number) => void}} handlers
   * @param {string} lastEventId the id to start from (Last-Event-ID).
   */
  constructor(handlers, lastEventId = '') {
    this.h = handlers;
    this.buf = '';
    this.data = [];
    this.type = '';
    this.lastEventId = lastEventId;
  }

  /** Feeds one chunk of text; dispatches every complete event in it. */
  push(chunk) {
    this.buf += chunk;
    let start = 0;
    for (;;) {
      const nl = this.buf.indexOf('\n', start);
      if (nl < 0) break;
      let line = this.buf.slice(start, nl);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      start = nl + 1;
      this.line(line);
    }
    this.buf = this.buf.slice(start);
    if (this.buf.length > MAX_LINE) {
      throw new Error(`sse: line longer than ${MAX_LINE} characters`);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length > 0) {
        this.h.onEvent({ type: this.type || 'message', data: this.data.join('\n'), id: this.lastEventId });
      }
      this.data = [];
      this.type = '';
      return;
    }
    if (line.startsWith(':')) {
      this.h.onComment?.(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data': this.data.push(value); break;
      case 'event': this.type = value; break;
      case 'id': if (!value.includes('\0')) this.lastEventId = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.h.onRetry?.(Number(value)); break;
      default: break; // unknown fields are ignored by the format
    }
  }
}
