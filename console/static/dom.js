// Building DOM nodes and formatting values for display.
//
// Every value shown comes from merchants or processors, so nothing here
// parses HTML: nodes are created one by one and text goes in as text nodes.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** The placeholder shown for a missing value. */
export const DASH = '–';

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** h builds an HTML element: h('a', {href: '#/x'}, 'text', child). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** s builds an SVG element. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** clear removes every child of el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** token turns a value from the API into a safe class-name suffix. */
export function token(v) {
  const t = String(v ?? '').toLowerCase().replace(/[^a-z0-9_-]/g, '');
  return t || 'unknown';
}

/** show is the text of a scalar value, or a dash when it is missing. */
export function show(v) {
  if (v === undefined || v === null || v === '') return DASH;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** num formats an integer count with thousands separators, or a dash. */
export function num(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  return v.toLocaleString('en-US', {maximumFractionDigits: 2});
}

// Currencies whose minor unit is not a hundredth (ISO 4217 as processors use it).
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg',
  'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** decimals is the number of minor-unit digits of currency. */
export function decimals(currency) {
  const c = String(currency || '').toLowerCase();
  if (ZERO_DECIMAL.has(c)) return 0;
  if (THREE_DECIMAL.has(c)) return 3;
  return 2;
}

/**
 * money formats an integer amount of minor units in major units with the
 * currency, using integer arithmetic only: money(123456, 'usd') is
 * "1,234.56 USD", money(500, 'jpy') is "500 JPY".
 */
export function money(amount, currency) {
  if (typeof amount !== 'number' || !Number.isInteger(amount)) return DASH;
  const d = decimals(currency);
  const neg = amount < 0;
  const digits = String(Math.abs(amount)).padStart(d + 1, '0');
  const whole = digits.slice(0, digits.length - d).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = d ? '.' + digits.slice(digits.length - d) : '';
  const cur = currency ? ' ' + String(currency).toUpperCase() : '';
  return (neg ? '−' : '') + whole + frac + cur;
}

/** toDate reads an RFC 3339 string, unix seconds or a Date; null when it is none. */
export function toDate(v) {
  if (v === undefined || v === null || v === '') return null;
  let d;
  if (v instanceof Date) d = v;
  else if (typeof v === 'number') d = new Date(v * 1000);
  else if (typeof v === 'string') {
    if (v.startsWith('0001-01-01')) return null; // a zero time
    d = new Date(v);
  } else return null;
  return Number.isNaN(d.getTime()) ? null : d;
}

function pad(n, w = 2) { return String(n).padStart(w, '0'); }

/** utc formats a time as "2026-03-01 14:05:09 UTC". */
export function utc(d) {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

/** ago formats the time from d to now: "3 h 20 min ago", "in 5 min". */
export function ago(d, now = new Date()) {
  let sec = Math.round((now.getTime() - d.getTime()) / 1000);
  const future = sec < 0;
  sec = Math.abs(sec);
  let text;
  if (sec < 60) text = `${sec} s`;
  else if (sec < 3600) text = `${Math.floor(sec / 60)} min`;
  else if (sec < 86400) text = `${Math.floor(sec / 3600)} h ${Math.floor(sec % 3600 / 60)} min`;
  else text = `${Math.floor(sec / 86400)} d ${Math.floor(sec % 86400 / 3600)} h`;
  return future ? `in ${text}` : `${text} ago`;
}

/** time is a <time> element showing v in UTC, or a dash (or the raw text when unreadable). */
export function time(v, {relative = false} = {}) {
  const d = toDate(v);
  if (!d) return document.createTextNode(v ? String(v) : DASH);
  const el = h('time', {datetime: d.toISOString(), title: ago(d)}, utc(d));
  if (!relative) return el;
  return h('span', {class: 'when'}, el, h('span', {class: 'muted'}, ' · ' + ago(d)));
}

/** ms formats a duration in milliseconds: "850 ms", "12.4 s"; a dash when missing. */
export function ms(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  if (Math.abs(v) < 1000) return `${Math.round(v)} ms`;
  if (Math.abs(v) < 60000) return `${(v / 1000).toFixed(1)} s`;
  return `${(v / 60000).toFixed(1)} min`;
}

/** isChargeID reports whether v looks like a charge id. */
export function isChargeID(v) {
  return typeof v === 'string' && /^ch_[A-Za-z0-9]{4,64}$/.test(v);
}

/** chargeHref is the console route of a charge. */
export function chargeHref(id) {
  return '#/charge/' + encodeURIComponent(id);
}

/** chargeLink links to a charge's timeline; a dash when id is empty. */
export function chargeLink(id) {
  if (!id) return document.createTextNode(DASH);
  return h('a', {href: chargeHref(id), class: 'mono'}, String(id));
}

/** badge shows a status or class as a coloured label. */
export function badge(v, family = 'status') {
  if (v === undefined || v === null || v === '') return document.createTextNode(DASH);
  return h('span', {class: `badge ${family}-${token(v)}`}, String(v));
}

/** transition shows "before → after" with badges. */
export function transition(before, after) {
  return h('span', {class: 'transition'}, badge(before), h('span', {class: 'arrow', 'aria-label': 'to'}, ' → '), badge(after));
}

/**
 * jsonView renders a JSON value as indented text; string values that are
 * charge ids become links to their timeline.
 */
export function jsonView(value) {
  const pre = h('pre', {class: 'json'});
  const out = [];
  const write = (v, indent) => {
    const sp = '  '.repeat(indent);
    if (Array.isArray(v)) {
      if (v.length === 0) { out.push('[]'); return; }
      out.push('[\n');
      v.forEach((x, i) => {
        out.push(sp + '  ');
        write(x, indent + 1);
        out.push(i < v.length - 1 ? ',\n' : '\n');
      });
      out.push(sp + ']');
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (keys.length === 0) { out.push('{}'); return; }
      out.push('{\n');
      keys.forEach((k, i) => {
        out.push(sp + '  ', h('span', {class: 'json-key'}, JSON.stringify(k)), ': ');
        write(v[k], indent + 1);
        out.push(i < keys.length - 1 ? ',\n' : '\n');
      });
      out.push(sp + '}');
    } else if (typeof v === 'string') {
      if (isChargeID(v)) out.push('"', chargeLink(v), '"');
      else out.push(h('span', {class: 'json-str'}, JSON.stringify(v)));
    } else {
      out.push(h('span', {class: 'json-lit'}, JSON.stringify(v)));
    }
  };
  write(value, 0);
  append(pre, out);
  return pre;
}

/** disclose wraps content in a <details> with summary text. */
export function disclose(summary, content, open = false) {
  return h('details', {class: 'disclose', open}, h('summary', null, summary), content);
}

/** kv renders [label, value] pairs as a description list, skipping null rows. */
export function kv(pairs, cls = 'kv') {
  const dl = h('dl', {class: cls});
  for (const p of pairs) {
    if (!p) continue;
    const [k, v] = p;
    dl.appendChild(h('div', {class: 'kv-row'}, h('dt', null, k),
      h('dd', null, v instanceof Node ? v : show(v))));
  }
  return dl;
}

/** notice is a message box: kind is info, ok, warn or error. */
export function notice(kind, ...children) {
  const role = kind === 'error' ? 'alert' : 'status';
  return h('div', {class: `notice notice-${kind}`, role}, ...children);
}

/**
 * errorBox shows an API error: its message first, then the code and HTTP
 * status. A 401 says the key is unknown or revoked; a 403 that the key's role
 * may not do this.
 */
export function errorBox(err, ...extra) {
  const status = err && err.status;
  const message = (err && err.message) || 'Something went wrong.';
  const parts = [];
  if (status === 401) {
    parts.push(h('p', {class: 'notice-title'}, 'Unknown or revoked key'));
    parts.push(h('p', null, 'The gateway no longer accepts this key. Forget it and paste a valid operator or auditor key above.'));
  } else if (status === 403) {
    parts.push(h('p', {class: 'notice-title'}, 'This key\'s role may not do that'));
    parts.push(h('p', null, message));
  } else {
    parts.push(h('p', {class: 'notice-title'}, message));
  }
  const meta = [];
  if (err && err.code) meta.push(`code ${err.code}`);
  if (err && err.param) meta.push(`param ${err.param}`);
  if (status) meta.push(`HTTP ${status}`);
  if (meta.length) parts.push(h('p', {class: 'notice-meta mono'}, meta.join(' · ')));
  return notice('error', ...parts, ...extra);
}

/** loading is a placeholder shown while a request runs. */
export function loading(text = 'Loading…') {
  return h('p', {class: 'loading', role: 'status'}, text);
}

let toastTimer = 0;

/** toast announces a short result to everyone, screen readers included. */
export function toast(text, kind = 'ok') {
  const el = document.getElementById('toast');
  if (!el) return;
  el.textContent = text;
  el.className = `toast toast-${kind} toast-shown`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 6000);
}

/**
 * confirm asks a question in the modal dialog and resolves to true when the
 * operator confirms. body is a list of nodes; Cancel has the focus first.
 */
export function confirm({title, body, confirmLabel = 'Confirm', danger = false}) {
  const dialog = document.getElementById('confirm');
  clear(document.getElementById('confirm-title')).appendChild(document.createTextNode(title));
  append(clear(document.getElementById('confirm-body')), [body]);
  const ok = document.getElementById('confirm-ok');
  ok.textContent = confirmLabel;
  ok.className = danger ? 'btn btn-danger' : 'btn btn-primary';
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dialog.returnValue = 'cancel';
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'ok');
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
    }, {once: true});
    dialog.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

/** table builds a table from column headings and rows of cells. */
export function table(headings, rows, {caption, cls = 'grid'} = {}) {
  return h('div', {class: 'table-wrap'},
    h('table', {class: cls},
      caption ? h('caption', null, caption) : null,
      h('thead', null, h('tr', null, headings.map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, rows)));
}
