// Events out: a charge's events with their deliveries, and the merchant's webhook endpoints.

import {request, getKey} from './api.js';
import {h, clear, show, num, time, badge, notice, errorBox, loading, table, DASH} from './dom.js';

/** tr is a table row of cells. */
const tr = (cells) => h('tr', null, cells.map((c) => h('td', null, c)));

/** deliveryCell says how the tries of delivering one event went. */
function deliveryCell(dl) {
  if (!dl.length) return h('span', {class: 'muted small'}, 'no endpoint wanted it');
  return h('ol', {class: 'deliveries small'}, dl.map((d) =>
    h('li', null, `#${show(d.attempt)} `, time(d.at), ' · ', d.delivered ? badge('delivered', 'delivery') : badge('failed', 'delivery'),
      ' · ', d.http_status ? `HTTP ${d.http_status}` : 'no answer', ` · ${num(d.duration_ms)} ms`,
      d.error ? h('span', {class: 'mono'}, ' · ' + String(d.error)) : null,
      d.next_retry_at ? h('span', null, ' · next try ', time(d.next_retry_at, {relative: true})) : null,
      h('span', {class: 'muted'}, ' → ', h('span', {class: 'mono'}, show(d.endpoint))))));
}

/** chargeEvents returns a card that loads the events of charge id with their deliveries. */
export function chargeEvents(id) {
  const body = h('div', null, loading());
  const card = h('section', {class: 'card', id: 'charge-events', 'aria-labelledby': 'events-title'},
    h('h3', {id: 'events-title'}, 'Events sent to webhooks'), body);
  (async () => {
    try {
      const list = await request('GET', '/v1/events?limit=100&charge=' + encodeURIComponent(id));
      const events = Array.isArray(list && list.data) ? list.data : [];
      const full = await Promise.all(events.map((e) => request('GET', '/v1/events/' + encodeURIComponent(e.id))));
      clear(body);
      if (!full.length) {
        body.appendChild(h('p', {class: 'small muted'}, 'No event yet: the charge has not settled.'));
        return;
      }
      body.appendChild(table(['Event', 'Type', 'When', 'Deliveries'], full.map((e) => tr([
        h('span', {class: 'mono'}, show(e.id)), badge(e.type, 'event'), time(e.created),
        deliveryCell(Array.isArray(e.deliveries) ? e.deliveries : []),
      ])), {caption: 'Newest first'}));
    } catch (err) {
      clear(body).appendChild(errorBox(err));
    }
  })();
  return card;
}

/** renderEndpoints fills section with the merchant's webhook endpoints and their state. */
export function renderEndpoints(section) {
  const body = h('div');
  section.append(h('div', {class: 'view-head'}, h('h2', null, 'Webhook endpoints')),
    h('p', {class: 'lede'}, 'Where this merchant\'s events are delivered, signed. An endpoint whose every delivery ' +
      'failed for 3 days is disabled, with the reason; register it again once it is fixed.'),
    body);
  if (!getKey()) return;
  body.appendChild(loading());
  (async () => {
    try {
      const list = await request('GET', '/v1/webhook_endpoints');
      const eps = Array.isArray(list && list.data) ? list.data : [];
      clear(body);
      if (!eps.length) {
        body.appendChild(notice('info', h('p', null, 'No webhook endpoint: POST /v1/webhook_endpoints with an operator key registers one.')));
        return;
      }
      body.appendChild(table(['Endpoint', 'URL', 'Events', 'State', 'Why'], eps.map((e) => tr([
        h('span', {class: 'mono'}, show(e.id)), h('span', {class: 'mono'}, show(e.url)),
        h('span', {class: 'small'}, Array.isArray(e.events) ? e.events.join(', ') : DASH),
        h('span', {class: 'endpoint-state'}, badge(e.status, 'endpoint'),
          e.failing_since ? h('span', {class: 'small'}, ' since ', time(e.failing_since)) : null),
        e.disabled_reason ? h('span', {class: 'small'}, String(e.disabled_reason)) : DASH,
      ])), {caption: 'Newest first'}));
    } catch (err) {
      clear(body).appendChild(errorBox(err));
    }
  })();
}
