// The reattempt report: per card, attempts, declines and reattempts against
// the card networks' caps, with charts and a CSV download.

import {request, getKey} from './api.js';
import {h, clear, num, show, badge, chargeLink, time, disclose, notice, errorBox, loading, table, toast, DASH} from './dom.js';
import {CAPS, CLASS_ORDER, capChart, classChart, capLegend} from './chart.js';

const CHART_ROWS = 15;

function pick(r, ...names) {
  for (const n of names) if (typeof r[n] === 'number' && Number.isFinite(r[n])) return r[n];
  return undefined;
}

/**
 * normalize reads one report row. Missing fields stay undefined (shown as a
 * dash), fields it does not know are ignored, the maxima are read under
 * either spelling (max_reattempts_30d or max_visa_reattempts_30d, ...), and
 * violations may be a count or the list of offending attempts.
 */
/** merchantsText names the merchants of a row the reader may see, and counts the others. */
export function merchantsText(r) {
  const others = (r.merchantCount ?? r.merchants.length) - r.merchants.length;
  const named = r.merchants.join(', ');
  if (others > 0) return named ? `${named} (+${others} other${others > 1 ? 's' : ''})` : `${others} other${others > 1 ? 's' : ''}`;
  return named || DASH;
}

export function normalize(r) {
  const v = r.violations;
  const list = Array.isArray(v) ? v : [];
  return {
    raw: r,
    account: typeof r.processor_account === 'string' ? r.processor_account : '',
    fingerprint: typeof r.fingerprint === 'string' ? r.fingerprint : '',
    network: typeof r.network === 'string' ? r.network.toLowerCase() : '',
    // merchant_ids names the merchants the reader may see; merchants counts them all.
    merchants: Array.isArray(r.merchant_ids) ? r.merchant_ids.map(String)
      : (Array.isArray(r.merchants) ? r.merchants.map(String) : []),
    merchantCount: typeof r.merchants === 'number' ? r.merchants : undefined,
    attempts: pick(r, 'attempts'),
    declines: pick(r, 'declines'),
    byClass: r.declines_by_class && typeof r.declines_by_class === 'object' ? r.declines_by_class : null,
    byCategory: r.declines_by_category && typeof r.declines_by_category === 'object' ? r.declines_by_category : null,
    reattempts: pick(r, 'reattempts'),
    max30d: pick(r, 'max_reattempts_30d', 'max_visa_reattempts_30d'),
    mc24h: pick(r, 'max_declines_24h', 'max_mastercard_declines_24h'),
    mc30d: pick(r, 'max_declines_30d', 'max_mastercard_declines_30d'),
    refused: pick(r, 'reattempts_refused'),
    violations: Array.isArray(v) ? v.length : (typeof v === 'number' ? v : undefined),
    violationList: list,
  };
}

function dateInput(d) {
  return d.toISOString().slice(0, 10);
}

function validDate(v) {
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(new Date(v + 'T00:00:00Z').getTime());
}

/** bounds turns the picked days into the RFC 3339 interval: from the first day's start to the last day's end (or now). */
export function bounds(fromDay, toDay, now = new Date()) {
  const from = new Date(fromDay + 'T00:00:00Z');
  let to = new Date(toDay + 'T00:00:00Z');
  to = new Date(to.getTime() + 86400000);
  if (to > now) to = now;
  const fmt = (d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {from: fmt(from), to: fmt(to)};
}

function counts(obj, order) {
  if (!obj) return DASH;
  const keys = Object.keys(obj);
  if (!keys.length) return DASH;
  const sorted = order ? order.filter((k) => keys.includes(k)).concat(keys.filter((k) => !order.includes(k)).sort())
    : keys.sort();
  return sorted.map((k) => `${k.replace(/_/g, ' ')} ${obj[k]}`).join(' · ');
}

// capOf is the rule a card is charted against, by network.
function capOf(r) {
  const visa = {value: r.max30d, cap: CAPS.visaReattempts30d, rule: 'Visa reattempts in 30 days'};
  const mc = {value: r.mc24h, cap: CAPS.mastercardDeclines24h, rule: 'Mastercard declines in 24 hours'};
  if (r.network === 'visa') return visa;
  if (r.network === 'mastercard') return mc;
  if (r.network === 'amex' || r.network === 'discover') return null;
  // Unknown network: both rules apply; chart the closer one.
  return (mc.value || 0) / mc.cap > (visa.value || 0) / visa.cap ? mc : visa;
}

function shortLabel(r) {
  const fp = r.fingerprint.length > 18 ? r.fingerprint.slice(0, 17) + '…' : r.fingerprint || '(no fingerprint)';
  return `${fp} · ${r.network || 'unknown'}`;
}

function violationDetails(r) {
  if (!r.violationList.length) return null;
  return disclose('Which attempts', h('ul', {class: 'plain small'}, r.violationList.map((v) => {
    if (!v || typeof v !== 'object') return h('li', null, show(v));
    return h('li', null, h('strong', null, show(v.rule)), ' · ', time(v.at), v.charge ? [' · ', chargeLink(v.charge)] : null,
      typeof v.count === 'number' && v.count ? ` · ${v.count} of ${show(v.limit)}` : null);
  })));
}

// overCap shows a count, in red when it is over its network's cap.
function overCap(text, over) {
  return over ? h('strong', {class: 'cell-bad', title: 'over the network cap'}, text) : text;
}

function row(r) {
  const bad = (r.violations || 0) > 0;
  const known = r.network === 'visa' || r.network === 'mastercard' || r.network === 'amex' || r.network === 'discover';
  const visaRules = r.network === 'visa' || !known;
  const mcRules = r.network === 'mastercard' || !known;
  // The figure that must be 0 and the refusals come first, so that they stay in view on a
  // narrow screen; the declines' breakdown wraps under its count.
  return h('tr', {class: bad ? 'row-danger' : null},
    h('td', {class: 'card-cell'},
      h('div', {class: 'mono nowrap'}, r.fingerprint || DASH),
      h('div', {class: 'small muted'}, badge(r.network || 'unknown', 'network'), ' ', h('span', {class: 'mono'}, r.account || DASH))),
    h('td', {class: 'num' + (bad ? ' cell-bad' : '')}, bad ? h('strong', null, num(r.violations)) : num(r.violations),
      violationDetails(r)),
    h('td', {class: 'num'}, num(r.refused)),
    h('td', {class: 'num'}, num(r.attempts)),
    h('td', {class: 'num'}, num(r.declines),
      h('div', {class: 'small muted breakdown'}, counts(r.byClass, CLASS_ORDER)),
      r.byCategory ? h('div', {class: 'small muted breakdown'}, 'cat. ' + counts(r.byCategory)) : null),
    h('td', {class: 'num'}, num(r.reattempts)),
    h('td', {class: 'num'}, overCap(num(r.max30d), visaRules && r.max30d > CAPS.visaReattempts30d)),
    h('td', {class: 'num'}, overCap(num(r.mc24h), mcRules && r.mc24h > CAPS.mastercardDeclines24h), ' / ',
      overCap(num(r.mc30d), mcRules && r.mc30d > CAPS.mastercardDeclines30d)),
    h('td', {class: 'small'}, merchantsText(r)));
}

function tile(label, value, bad = false) {
  return h('div', {class: 'tile' + (bad ? ' tile-bad' : '')}, h('div', {class: 'tile-value'}, value), h('div', {class: 'tile-label'}, label));
}

/** renderReport fills section with the reattempt report for the days in params (default the last 30). */
export function renderReport(section, _arg, params) {
  const now = new Date();
  const toDefault = dateInput(now);
  const fromDefault = dateInput(new Date(now.getTime() - 30 * 86400000));
  const fromDay = validDate(params.get('from')) ? params.get('from') : fromDefault;
  const toDay = validDate(params.get('to')) ? params.get('to') : toDefault;

  const fromIn = h('input', {id: 'report-from', type: 'date', value: fromDay, required: true});
  const toIn = h('input', {id: 'report-to', type: 'date', value: toDay, required: true});
  const csv = h('button', {type: 'button', class: 'btn btn-quiet', onclick: () => download()}, 'Download CSV');
  const formMsg = h('div', {'aria-live': 'polite'});
  const form = h('form', {class: 'inline-form', onsubmit: (ev) => {
    ev.preventDefault();
    if (!validDate(fromIn.value) || !validDate(toIn.value) || fromIn.value > toIn.value) {
      clear(formMsg).appendChild(notice('error', h('p', null, 'Pick a "from" day on or before the "to" day.')));
      return;
    }
    const next = `#/report?from=${fromIn.value}&to=${toIn.value}`;
    if (location.hash === next) load();
    else location.hash = next;
  }},
  h('label', {for: 'report-from'}, 'From'), fromIn,
  h('label', {for: 'report-to'}, 'To'), toIn,
  h('span', {class: 'small muted'}, 'UTC days, inclusive'),
  h('button', {type: 'submit', class: 'btn'}, 'Show'), csv);
  const body = h('div');
  section.append(
    h('div', {class: 'view-head'}, h('h2', null, 'Reattempt report')),
    h('p', {class: 'lede'}, 'One row per card at a processor account. Visa allows at most 15 reattempts of a card in 30 days; ' +
      'Mastercard at most 10 declines in 24 hours and 35 in 30 days. Violations must be 0.'),
    form, formMsg, body);
  if (!getKey()) {
    csv.disabled = true;
    return;
  }
  const range = bounds(fromDay, toDay, now);

  async function download() {
    csv.disabled = true;
    try {
      const blob = await request('GET', '/v1/reports/reattempts', {query: {...range, format: 'csv'}, blob: true});
      const url = URL.createObjectURL(blob);
      const a = h('a', {href: url, download: `paygate-reattempts-${fromDay}-to-${toDay}.csv`, hidden: true});
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      toast('CSV downloaded');
    } catch (err) {
      if (formMsg.isConnected) clear(formMsg).appendChild(errorBox(err));
    } finally {
      csv.disabled = false;
    }
  }

  async function load() {
    clear(formMsg);
    clear(body).appendChild(loading());
    try {
      const res = await request('GET', '/v1/reports/reattempts', {query: {...range, format: 'json'}});
      if (!body.isConnected) return;
      const rows = (Array.isArray(res && res.data) ? res.data : []).filter((r) => r && typeof r === 'object').map(normalize);
      clear(body);
      const sum = (f) => rows.reduce((a, r) => a + (typeof r[f] === 'number' ? r[f] : 0), 0);
      const violations = sum('violations');
      body.appendChild(h('p', {class: 'small muted'}, 'Period ', time(res && res.from ? res.from : range.from), ' to ',
        time(res && res.to ? res.to : range.to)));
      body.appendChild(h('div', {class: 'tiles'},
        tile('cards', num(rows.length)), tile('attempts', num(sum('attempts'))), tile('declines', num(sum('declines'))),
        tile('reattempts', num(sum('reattempts'))), tile('reattempts refused', num(sum('refused'))),
        tile('violations', num(violations), violations > 0)));
      if (violations > 0) {
        body.appendChild(notice('error', h('p', {class: 'notice-title'},
          `${violations} violation${violations === 1 ? '' : 's'} of the card network rules in this period.`),
        h('p', null, 'The rows concerned are red below; "Which attempts" lists them.')));
      }
      if (!rows.length) {
        body.appendChild(notice('info', h('p', null, 'No card had an attempt in this period.')));
        return;
      }
      const charted = rows.map((r) => ({r, c: capOf(r)})).filter((x) => x.c)
        .map(({r, c}) => ({label: shortLabel(r), value: c.value || 0, cap: c.cap, rule: c.rule, violation: (r.violations || 0) > 0}))
        .sort((a, b) => (b.violation - a.violation) || (b.value / b.cap - a.value / a.cap));
      const totals = {};
      for (const r of rows) for (const [k, v] of Object.entries(r.byClass || {})) if (typeof v === 'number') totals[k] = (totals[k] || 0) + v;
      body.appendChild(h('div', {class: 'chart-grid'},
        h('figure', {class: 'card chart-card'},
          h('figcaption', null, h('h3', null, 'Closest to the cap'),
            h('p', {class: 'small muted'}, charted.length > CHART_ROWS
              ? `The ${CHART_ROWS} of ${charted.length} cards closest to their network cap.`
              : 'Each card\'s largest count in a rolling window against its network\'s cap.')),
          charted.length ? capChart(charted.slice(0, CHART_ROWS)) : h('p', {class: 'muted'}, 'No Visa or Mastercard cards.'),
          capLegend()),
        h('figure', {class: 'card chart-card'},
          h('figcaption', null, h('h3', null, 'Declines by class'), h('p', {class: 'small muted'}, 'All cards in the period.')),
          classChart(totals))));
      body.appendChild(table(
        ['Card', 'Violations', 'Refused', 'Attempts', 'Declines', 'Reattempts', 'Visa max 30 d', 'MC max 24 h / 30 d', 'Merchants'],
        rows.sort((a, b) => (b.violations || 0) - (a.violations || 0)).map(row),
        {caption: 'Cards, violations first'}));
    } catch (err) {
      if (body.isConnected) clear(body).appendChild(errorBox(err));
    }
  }
  load();
}
