/**
 * A parser of the server-sent events format (the HTML standard's "event stream interpretation"): lines end in CRLF,
 * LF or CR; `field: value` lines build a message that a blank line dispatches; `data` lines join with "\n"; lines
 * starting with ":" are comments; `id` holds until changed; `retry` sets the reconnection delay.
 */

export interface SseMessage {
  /** The last event id seen on the stream (it persists across messages). */
  id: string | undefined;
  /** `event:` field; "message" when absent. */
  event: string;
  data: string;
}

export interface SseParser {
  /** Feeds decoded text; calls `onMessage` for each message completed and `onRetry` for each `retry:` value. */
  push(text: string): void;
}

export function createSseParser(
  onMessage: (m: SseMessage) => void,
  onRetry: (ms: number) => void = () => {},
): SseParser {
  let buffer = '';
  let lastId: string | undefined;
  let event = '';
  let data: string[] = [];
  // A CR at the end of a chunk may be the first half of a CRLF split across chunks.
  let pendingCr = false;

  const line = (l: string) => {
    if (l === '') {
      if (data.length > 0) onMessage({ id: lastId, event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) lastId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
  };

  return {
    push(text: string) {
      if (pendingCr && text.startsWith('\n')) text = text.slice(1);
      pendingCr = false;
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        line(buffer.slice(start, i));
        if (c === '\r') {
          if (i + 1 === buffer.length) pendingCr = true;
          else if (buffer[i + 1] === '\n') i++;
        }
        start = i + 1;
      }
      buffer = buffer.slice(start);
    },
  };
}
