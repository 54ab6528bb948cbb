/**
 * Requests refused before Fastify sees them. Node's HTTP parser rejects control bytes in a header, malformed chunked
 * bodies, bad or conflicting Content-Length, oversized request lines and headers, and bytes that are not HTTP at all
 * (the tail of a body longer than its Content-Length, say); Node then emits `clientError` with the socket. Kasse
 * answers these like every other refusal: 400 `invalid_request` with the Error body and a Request-Id, saying what
 * was wrong, then closes the connection (its framing can no longer be trusted).
 */
import { maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';

type ParserError = Error & { code?: string; reason?: string };

/** What the parser's error codes mean, in the words of the one who sent the request. */
function explain(err: ParserError): string {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return `The request line and headers are too large (at most ${Math.floor(maxHeaderSize / 1024)} KiB together); shorten the URL or the headers.`;
    case 'HPE_INVALID_HEADER_TOKEN':
      return 'A request header contains a character HTTP does not allow (control bytes are not allowed in header names or values).';
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'The chunked request body is malformed (Transfer-Encoding: chunked).';
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return 'Content-Length is not a single whole number, or is sent together with Transfer-Encoding.';
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return 'Transfer-Encoding is not one HTTP supports here (use chunked, or Content-Length).';
    case 'HPE_INVALID_METHOD':
      return 'The request does not start with a known HTTP method. Was the body of the previous request longer than its Content-Length?';
    case 'HPE_INVALID_URL':
      return 'The request target is not a valid URL.';
    case 'HPE_INVALID_VERSION':
      return 'The HTTP version is not supported; use HTTP/1.1.';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'The request did not arrive in time. Was Content-Length larger than the body?';
    default:
      return `The request is not valid HTTP/1.1 (${err.reason ?? err.code ?? 'unparsable'}).`;
  }
}

/** The listeners' `clientErrorHandler`: the Error body for what the parser refused. */
export function refuseUnparsable(log: Logger, nextRequestId: () => string) {
  return (err: ParserError, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // Only when no answer to an earlier request on this connection is being written, or the two would interleave.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const id = nextRequestId();
      const message = explain(err);
      log.debug({ reqId: id, code: err.code, reason: err.reason }, 'request refused by the HTTP parser');
      const body = JSON.stringify(new ApiError('invalid_request', message).toBody());
      socket.write(
        `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
          `request-id: ${id}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
