/** URL checks shared by every resource that stores a merchant's URL (webhook, success and cancel URLs, links). */
import { ApiError } from './errors.ts';

/** 400 `invalid_request` (naming `param`) unless `value` is an http(s) URL, or https only when `httpsOnly`. */
export function assertHttpUrl(value: string, param: string, httpsOnly = false): void {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ApiError('invalid_request', `${param} must be a URL`, param);
  }
  if (u.protocol !== 'https:' && (httpsOnly || u.protocol !== 'http:')) {
    throw new ApiError('invalid_request', `${param} must be an ${httpsOnly ? 'https' : 'http(s)'} URL`, param);
  }
}
