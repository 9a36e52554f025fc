// The JSON API client: the operator's key and requests that carry it.
//
// The key lives in this tab's sessionStorage only: never in a URL, never in
// localStorage, and it is gone when the tab closes or "Forget key" is used.

const STORAGE = 'paygate.ops.key';
const IDENTITY = 'paygate.ops.identity';

/** getKey returns the key of this tab's session, or "". */
export function getKey() {
  try {
    return sessionStorage.getItem(STORAGE) || '';
  } catch {
    return '';
  }
}

/**
 * identity returns what the gateway said of the key when it was checked:
 * {id, merchant, role}, or null without a key.
 */
export function identity() {
  try {
    const v = JSON.parse(sessionStorage.getItem(IDENTITY) || 'null');
    return v && typeof v === 'object' && typeof v.role === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** role is the role of the key in use: "operator", "auditor", or "" without a key. */
export function role() {
  const id = identity();
  return id ? id.role : '';
}

/** setKey keeps key and what the gateway said of it for this tab's session. */
export function setKey(key, who) {
  sessionStorage.setItem(STORAGE, key);
  sessionStorage.setItem(IDENTITY, JSON.stringify({id: String(who.id || ''), merchant: String(who.merchant || ''), role: String(who.role || '')}));
}

/** forgetKey drops the key. */
export function forgetKey() {
  try {
    sessionStorage.removeItem(STORAGE);
    sessionStorage.removeItem(IDENTITY);
  } catch {
    // Storage unavailable: there is nothing to forget.
  }
}

/**
 * checkKey asks the gateway who key is (GET /v1/key), once, before the console keeps it:
 * it resolves to {id, merchant, role} and rejects with an ApiError (401 for an unknown or
 * revoked key).
 */
export async function checkKey(key) {
  let res;
  try {
    res = await fetch('/v1/key', {headers: {Authorization: 'Bearer ' + key, Accept: 'application/json'},
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer'});
  } catch (e) {
    throw new ApiError(0, {code: 'network_error', message: `The gateway could not be reached (${e && e.message ? e.message : 'network error'}).`});
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON: the status alone tells.
  }
  if (!res.ok) throw new ApiError(res.status, body && body.error);
  if (!body || typeof body.role !== 'string') {
    throw new ApiError(res.status, {code: 'bad_response', message: 'The gateway answered with something other than a key.'});
  }
  return body;
}

/** ApiError is an error answer of the API, from its {"error": {...}} envelope. */
export class ApiError extends Error {
  constructor(status, body) {
    const b = body && typeof body === 'object' ? body : {};
    super(typeof b.message === 'string' && b.message ? b.message : `The gateway answered HTTP ${status}.`);
    this.status = status;
    this.type = typeof b.type === 'string' ? b.type : '';
    this.code = typeof b.code === 'string' ? b.code : '';
    this.param = typeof b.param === 'string' ? b.param : '';
    this.body = b;
  }
}

// idempotencyKey returns a fresh key for one operator action.
function idempotencyKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'ops_' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * request calls the API and resolves to the decoded JSON (or a Blob with
 * {blob: true}); it rejects with an ApiError carrying the envelope's message.
 * POSTs carry a fresh Idempotency-Key per call.
 */
export async function request(method, path, {query, body, blob = false} = {}) {
  const key = getKey();
  if (!key) throw new ApiError(0, {code: 'no_key', message: 'Paste an API key above first.'});
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const qs = q.toString();
    if (qs) url += '?' + qs;
  }
  const headers = {Authorization: 'Bearer ' + key, Accept: blob ? 'text/csv, */*' : 'application/json'};
  const init = {method, headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer'};
  if (method !== 'GET') headers['Idempotency-Key'] = idempotencyKey();
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, {code: 'network_error', message: `The gateway could not be reached (${e && e.message ? e.message : 'network error'}).`});
  }
  if (!res.ok) {
    let env = null;
    try {
      env = await res.json();
    } catch {
      // Not JSON: the status alone tells.
    }
    throw new ApiError(res.status, env && env.error);
  }
  if (blob) return res.blob();
  try {
    return await res.json();
  } catch {
    throw new ApiError(res.status, {code: 'bad_response', message: 'The gateway answered with something other than JSON.'});
  }
}
