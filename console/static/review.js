// The review queue: charges that need a person, riskiest first.

import {request, getKey} from './api.js';
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

function urgentCard(item) {
  const c = item.charge || {};
  const r = item.review || {};
  return h('li', {class: 'urgent-card'},
    h('div', {class: 'urgent-head'},
      h('span', {class: 'urgent-flag'}, 'Highest risk'),
      time(r.since, {relative: true})),
    h('div', {class: 'urgent-body'},
      h('p', {class: 'urgent-amount'}, money(c.amount, c.currency)),
      h('p', null, chargeLink(c.id), ' ', badge(c.status)),
      h('p', {class: 'urgent-reason'}, show(r.reason)),
      evidenceSummary(item.evidence) ? h('p', {class: 'muted small'}, evidenceSummary(item.evidence)) : null),
    h('div', {class: 'urgent-actions'},
      c.id ? h('a', {class: 'btn btn-danger', href: chargeHref(c.id)}, 'Open timeline and resolve') : null,
      item.evidence ? disclose('Evidence', jsonView(item.evidence)) : null));
}

function row(item) {
  const c = item.charge || {};
  const r = item.review || {};
  const urgent = rankOf(item) >= 1;
  return h('tr', {class: urgent ? 'row-danger' : null},
    h('td', {class: 'nowrap'}, urgent ? h('span', {class: 'risk-dot', title: 'highest risk', 'aria-label': 'highest risk'}, '!') : null, chargeLink(c.id)),
    h('td', {class: 'num'}, money(c.amount, c.currency)),
    h('td', null, badge(c.status)),
    h('td', null, show(r.reason)),
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
      'Riskiest first (a processor success found after a manual "failed"), then oldest.'),
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
      if (urgent.length) {
        body.appendChild(h('section', {class: 'urgent', 'aria-labelledby': 'urgent-title'},
          h('h3', {id: 'urgent-title'}, `Processor success found after a manual "failed" (${urgent.length})`),
          h('p', {class: 'small'}, 'The customer may have paid for a charge recorded as failed. Check the evidence and resolve these first.'),
          h('ul', {class: 'urgent-list'}, urgent.map(urgentCard))));
      }
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
