/**
 * File uploads on the dashboard (the Settings page's logo): `multipart/form-data` bodies of at most UPLOAD_LIMIT
 * bytes read into the same `Form` every action gets — text fields as they are, a file field as its bytes in base64
 * (so the CSRF check and the action's signature stay the ones of every other form), with the type the browser
 * claims for it beside it (`<name>:type`: the part's Content-Type, else what its file name's extension says).
 * A body over the limit never reaches an action; `tooLargeUpload` says what to tell about it.
 */
import type { FastifyInstance } from 'fastify';
import { invalid } from '../../core/errors.ts';

/** NOTE: an upload body is at most 512 kB (a 256 kB logo with the form's other fields and multipart framing). */
export const UPLOAD_LIMIT = 512 * 1024;

/** The dashboard's uploads: the action's address, what the file is, its own limit, and the page its form is on. */
const UPLOADS = [
  {
    action: /^\/dashboard\/(test|live)\/settings\/logo(?:\?|$)/,
    what: 'logo',
    limit: '256 kB',
    page: 'Settings',
    back: (mode: string) => `/dashboard/${mode}/settings#logo`,
  },
];

/**
 * What to tell a person whose upload was over UPLOAD_LIMIT (refused before any action read it): the file's own limit,
 * how large it was, and the page to go back to. Null when `url` takes no upload.
 */
export function tooLargeUpload(
  url: string,
  contentLength: string | undefined,
): { message: string; back: string; page: string } | null {
  for (const u of UPLOADS) {
    const m = u.action.exec(url);
    if (!m) continue;
    const bytes = Number(contentLength);
    const size =
      Number.isFinite(bytes) && bytes > 0
        ? bytes >= 1024 * 1024
          ? ` (${(bytes / 1024 / 1024).toFixed(1)} MB)`
          : ` (${Math.ceil(bytes / 1024)} kB)`
        : '';
    return {
      message: `The ${u.what} may be at most ${u.limit}; the file sent was larger${size}. Nothing was changed. Choose a smaller PNG, JPEG or WebP file on ${u.page}.`,
      back: u.back(m[1]!),
      page: u.page,
    };
  }
  return null;
}

/** The media type a file's name claims, from its extension (what browsers send when they do not know). */
const BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  svg: 'image/svg+xml',
};

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
    const filename = /content-disposition:[^\r\n]*\bfilename="([^"]*)"/i.exec(head)?.[1];
    if (name !== undefined && filename !== undefined) {
      out[name] = content.toString('base64');
      const declared = /^content-type:\s*([^;\r\n]+)/im.exec(head)?.[1]?.trim().toLowerCase() ?? '';
      const extension = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase() ?? '';
      out[`${name}:type`] =
        declared && declared !== 'application/octet-stream' ? declared : (BY_EXTENSION[extension] ?? '');
    } else if (name !== undefined) out[name] = content.toString('utf8');
    at = next;
  }
  throw invalid('The upload is not a complete multipart form.');
}
