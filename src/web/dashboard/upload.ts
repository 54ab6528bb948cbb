/**
 * File uploads on the dashboard (the Settings page's logo): `multipart/form-data` bodies of at most UPLOAD_LIMIT
 * bytes read into the same `Form` every action gets — text fields as they are, a file field as its bytes in base64
 * (so the CSRF check and the action's signature stay the ones of every other form).
 */
import type { FastifyInstance } from 'fastify';
import { invalid } from '../../core/errors.ts';

/** NOTE: an upload body is at most 512 kB (a 256 kB logo with the form's other fields and multipart framing). */
export const UPLOAD_LIMIT = 512 * 1024;

/** Accepts `multipart/form-data` bodies in this plugin's routes. */
export function addMultipartParser(app: FastifyInstance): void {
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit: UPLOAD_LIMIT }, (req, body, done) => {
    try {
      done(null, parseMultipart(body as Buffer, String(req.headers['content-type'] ?? '')));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/** The fields of a multipart body: text as text, files as base64 of their bytes. 400 for a body that is not one. */
export function parseMultipart(body: Buffer, contentType: string): Record<string, string> {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw invalid('The upload is not a multipart form.');
  const delimiter = Buffer.from(`--${boundary}`);
  const out: Record<string, string> = {};
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') return out;
    const headEnd = body.indexOf('\r\n\r\n', start);
    const next = body.indexOf(delimiter, start);
    if (headEnd === -1 || next === -1 || headEnd > next) break;
    const head = body.subarray(start, headEnd).toString('utf8');
    const content = body.subarray(headEnd + 4, next - 2); // the part ends with CRLF before the delimiter
    const name = /content-disposition:[^\r\n]*\bname="([^"]*)"/i.exec(head)?.[1];
    const isFile = /content-disposition:[^\r\n]*\bfilename="/i.test(head);
    if (name !== undefined) out[name] = isFile ? content.toString('base64') : content.toString('utf8');
    at = next;
  }
  throw invalid('The upload is not a complete multipart form.');
}
