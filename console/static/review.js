// The review queue: charges that need a person, riskiest first.

import {request, getKey, role} from './api.js';
import {h, clear, money, badge, chargeLink, chargeHref, time, jsonView, disclose, notice, errorBox, loading, table, show} from './dom.js';

/** evidenceSummary picks a one-line reading of a free-form reconciliation check. */
export function evidenceSummary(ev) {
  if (!ev || typeof ev !== 'object') return '';
  const d = ev.decision && typeof ev.decision === 'object' ? ev.decision : ev;
  const parts = [];
  for (const k of ['kind', 'outcome', 'reason', 'status', 'payment_intent']) {
    if (typeof d[k] === 'string' && d[k]) parts.push(`${k.replace('_', ' ')}: ${d[k]}`);
  }
  if (parts.length === 0) {
    for (const [k, v] of Object.entries(ev)) {
      if (parts.length >= 3) break;
      if (v !== null && typeof v !== 'object') parts.push(`${k}: ${v}`);
    }
  }
  return parts.join(' · ');
}

function rankOf(item) {
  const r = item && item.review && item.review.rank;
  return typeof r === 'number' ? r : 0;
}

// The review reasons that put a charge first in line (rank 1): processor evidence against an
// operator's resolution reopens the charge (reconcile.ReasonContradictsManual); a charge found
// paid while another live charge holds its reference stays first until a person refunds one
// (store.ReasonDuplicatePayment).
const CONTRADICTS_MANUAL = 'contradicts_manual_resolution';
const DUPLICATE_PAYMENT = 'duplicate_payment';

// The kinds of first-rank item, in the order the queue shows them, with their heading and
// what they mean. "other" is a first-rank item of a reason this console does not know.
const RISKS = {
  paid_after_failed: {
    title: 'Processor success found after a manual "failed"',
    lead: 'The customer may have paid for a charge recorded as failed.',
  },
  duplicate_payment: {
    title: 'Second payment for one order',
    lead: 'The processor took a payment for a charge while another live charge holds its reference: ' +
      'the customer may have paid twice for one order.',
  },
  contradicts_manual: {
    title: 'Processor evidence contradicts a manual resolution',
    lead: 'The processor shows another outcome than the one an operator recorded.',
  },
  other: {
    title: 'Highest risk',
    lead: 'Charges the reconciler put first in line.',
  },
};

function text(v) {
  return typeof v === 'string' ? v : '';
}

function decisionOf(check) {
  return check && typeof check === 'object' && check.decision && typeof check.decision === 'object' ? check.decision : null;
}

// contradiction returns the check that reopened item against a manual resolution (the last
// one decided so; later checks of a reopened charge are decided with no manual resolution),
// or the item's last check when none says so.
function contradiction(item) {
  const checks = Array.isArray(item.checks) ? item.checks : [];
  for (const k of [item.evidence, ...checks.slice().reverse()]) {
    const d = decisionOf(k);
    if (d && d.reason === CONTRADICTS_MANUAL) return k;
  }
  return item.evidence && typeof item.evidence === 'object' ? item.evidence : {};
}

// processorOutcome is the outcome a check's decision shows: its outcome, or "succeeded" for a
// succeeded PaymentIntent that does not match the charge (decided against a manual "failed").
function processorOutcome(d) {
  if (text(d.outcome)) return d.outcome;
  if (d.status === 'succeeded') return 'succeeded';
  return '';
}

/**
 * reviewLabel reads why a charge is in review from its reason and evidence, for the first-rank
 * reasons: {kind, title, lead, text, other} (other: for a second payment, the charge that
 * holds its reference or the live charge of its reattempt chain, or ""), or null for any
 * other reason. item is a review queue entry ({charge, review: {reason}, evidence, checks}).
 */
export function reviewLabel(item) {
  const c = (item && item.charge) || {};
  const reason = text(item && item.review && item.review.reason);
  if (reason === DUPLICATE_PAYMENT) {
    const byChain = !text(c.reference_duplicate_of) && text(c.reattempt_duplicate_of);
    const other = text(c.reference_duplicate_of) || text(c.reattempt_duplicate_of);
    const ref = text(c.reference) ? ` (${c.reference})` : '';
    const held = byChain ? 'of its reattempt chain is live or paid' : `holds its reference${ref}`;
    return {kind: 'duplicate_payment', ...RISKS.duplicate_payment, other,
      text: `The processor took this charge's payment while ${other ? 'charge ' + other : 'another live charge'} ` +
        `${held}: two payments for one order. Refund one, then resolve this charge.`};
  }
  if (reason !== CONTRADICTS_MANUAL) return null;
  const check = contradiction(item);
  const manual = text(check.manual);
  const d = decisionOf(check) || {};
  const shows = processorOutcome(d);
  const kind = manual === 'failed' && shows === 'succeeded' ? 'paid_after_failed' : 'contradicts_manual';
  const parts = [manual ? `An operator resolved this charge as "${manual}"` : 'An operator resolved this charge by hand'];
  if (shows) {
    const dec = d.decline && typeof d.decline === 'object' ? d.decline : {};
    const code = text(dec.decline_code) || text(dec.code);
    parts.push(`; the processor shows it ${shows}${shows === 'declined' && code ? ` (${code})` : ''}`);
  } else {
    parts.push('; the processor shows another outcome');
  }
  if (Array.isArray(d.mismatch) && d.mismatch.length) {
    parts.push(`, with a PaymentIntent that differs from the charge in ${d.mismatch.join(', ')}`);
  }
  parts.push('.');
  if (shows === 'succeeded') {
    parts.push(` The customer may have paid for a charge recorded as ${manual || 'unpaid'}.`);
  } else if (manual === 'succeeded') {
    parts.push(' The charge is recorded as paid, but the processor took no payment: the order may have been fulfilled unpaid.');
  }
  return {kind, ...RISKS[kind], other: '', text: parts.join('')};
}

// riskOf labels a first-rank item: reviewLabel, or "other" for a reason it does not know.
function riskOf(item) {
  const reason = text(item && item.review && item.review.reason);
  return reviewLabel(item) || {kind: 'other', ...RISKS.other, other: '', text: `Reason: ${reason || 'none given'}.`};
}

function urgentCard(item) {
  const c = item.charge || {};
  const r = item.review || {};
  const risk = riskOf(item);
  return h('li', {class: 'urgent-card'},
    h('div', {class: 'urgent-head'},
      h('span', {class: 'urgent-flag'}, 'Highest risk'),
      time(r.since, {relative: true})),
    h('div', {class: 'urgent-body'},
      h('p', {class: 'urgent-amount'}, money(c.amount, c.currency)),
      h('p', null, chargeLink(c.id), ' ', badge(c.status)),
      h('p', {class: 'urgent-reason'}, risk.text),
      risk.other ? h('p', null, 'Other charge for the order: ', chargeLink(risk.other)) : null,
      h('p', {class: 'muted small'}, 'Reason: ', h('span', {class: 'mono'}, show(r.reason))),
      evidenceSummary(item.evidence) ? h('p', {class: 'muted small'}, evidenceSummary(item.evidence)) : null),
    h('div', {class: 'urgent-actions'},
      c.id ? h('a', {class: 'btn btn-danger', href: chargeHref(c.id)}, role() === 'operator' ? 'Open timeline and resolve' : 'Open timeline') : null,
      item.evidence ? disclose('Evidence', jsonView(item.evidence)) : null));
}

// urgentSections groups the first-rank items by what they are, in the order of RISKS, each
// group in queue order.
function urgentSections(urgent) {
  const groups = new Map(Object.keys(RISKS).map((k) => [k, []]));
  for (const it of urgent) groups.get(riskOf(it).kind).push(it);
  return [...groups].filter(([, items]) => items.length).map(([kind, items]) =>
    h('section', {class: 'urgent', 'aria-labelledby': `urgent-title-${kind}`},
      h('h3', {id: `urgent-title-${kind}`}, `${RISKS[kind].title} (${items.length})`),
      h('p', {class: 'small'}, RISKS[kind].lead, ' Check the evidence and resolve these first.'),
      h('ul', {class: 'urgent-list'}, items.map(urgentCard))));
}

function row(item) {
  const c = item.charge || {};
  const r = item.review || {};
  const urgent = rankOf(item) >= 1;
  return h('tr', {class: urgent ? 'row-danger' : null},
    h('td', {class: 'nowrap'}, urgent ? h('span', {class: 'risk-dot', title: 'highest risk', 'aria-label': 'highest risk'}, '!') : null, chargeLink(c.id)),
    h('td', {class: 'num'}, money(c.amount, c.currency)),
    h('td', null, badge(c.status)),
    h('td', null, urgent ? [h('strong', null, riskOf(item).title), h('br'), h('span', {class: 'mono small'}, show(r.reason))] : show(r.reason)),
    h('td', null, time(r.since, {relative: true})),
    h('td', {class: 'evidence-cell'},
      h('span', {class: 'small'}, evidenceSummary(item.evidence) || '–'),
      item.evidence ? disclose('Evidence JSON', jsonView(item.evidence)) : null));
}

/** renderReview fills section with the review queue. */
export function renderReview(section) {
  const body = h('div');
  const refresh = h('button', {type: 'button', class: 'btn btn-quiet', onclick: () => load()}, 'Refresh');
  section.append(
    h('div', {class: 'view-head'},
      h('h2', null, 'Review queue'),
      h('div', {class: 'view-tools'}, refresh)),
    h('p', {class: 'lede'}, 'Charges that need a person: pending past their reconciliation window or with conflicting evidence. ' +
      'Riskiest first (processor evidence contradicting a manual resolution, or a second payment for one order), then oldest.'),
    body);
  if (!getKey()) {
    refresh.disabled = true;
    return;
  }

  async function load() {
    clear(body).appendChild(loading());
    refresh.disabled = true;
    try {
      const list = await request('GET', '/v1/review');
      if (!body.isConnected) return;
      const items = Array.isArray(list && list.data) ? list.data.slice() : [];
      // The server orders by risk then age; keep its order, but never let a rank-1 item sink.
      const urgent = items.filter((it) => rankOf(it) >= 1);
      const rest = items.filter((it) => rankOf(it) < 1);
      clear(body);
      if (items.length === 0) {
        body.appendChild(notice('ok', h('p', {class: 'notice-title'}, 'Nothing needs a person right now.')));
        return;
      }
      body.appendChild(h('p', {class: 'count'}, `${items.length} charge${items.length === 1 ? '' : 's'} waiting` +
        (urgent.length ? ` · ${urgent.length} at the highest risk` : '')));
      body.append(...urgentSections(urgent));
      body.appendChild(table(['Charge', 'Amount', 'Status', 'Reason', 'Waiting since', 'Last reconciliation check'],
        urgent.concat(rest).map(row), {caption: 'All charges in review, in queue order'}));
    } catch (err) {
      if (body.isConnected) clear(body).appendChild(errorBox(err));
    } finally {
      refresh.disabled = false;
    }
  }
  load();
}
