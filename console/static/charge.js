// One charge: its facts, its timeline, "query processor now" and manual resolution.

import {request, getKey, role} from './api.js';
import {
  h, clear, money, badge, transition, chargeLink, time, toDate, ms, num, show, kv,
  jsonView, disclose, notice, errorBox, loading, confirm, toast, isChargeID, DASH,
} from './dom.js';
import {evidenceSummary, reviewLabel} from './review.js';
import {chargeEvents} from './events.js';

const OUTCOMES = [
  ['succeeded', 'Succeeded', 'the processor has the money: the customer paid'],
  ['declined', 'Declined', 'the issuer refused it'],
  ['failed', 'Failed', 'the charge never took effect at the processor'],
];

/** renderCharge fills section with the charge lookup and, given an id, the charge. */
export function renderCharge(section, id) {
  const input = h('input', {id: 'charge-id', type: 'text', class: 'mono', value: id || '', placeholder: 'ch_…',
    spellcheck: 'false', autocomplete: 'off', required: true});
  const form = h('form', {class: 'inline-form', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    const v = input.value.trim();
    if (v) location.hash = '#/charge/' + encodeURIComponent(v);
  }},
  h('label', {for: 'charge-id'}, 'Charge id'), input, h('button', {type: 'submit', class: 'btn'}, 'Open'));
  const body = h('div');
  section.append(
    h('div', {class: 'view-head'}, h('h2', null, id ? 'Charge' : 'Charge timeline'), form),
    body);
  if (!id) {
    body.appendChild(h('p', {class: 'lede'}, 'Open a charge by id to see its timeline: every processor attempt, every state change ' +
      'with who, when and why, and every reconciliation check. Charge ids elsewhere in the console link here.'));
    return;
  }
  if (!getKey()) return;
  new ChargeView(body, id).load();
}

/** chain lists the charges of a reattempt chain, oldest first, with the one shown marked. */
function chain(c) {
  const steps = Array.isArray(c.chain) ? c.chain.filter((x) => x && typeof x === 'object') : [];
  if (!steps.length) return null;
  return h('div', {class: 'subcard'}, h('h4', null, 'Reattempt chain'),
    h('ol', {class: 'chain'}, steps.map((st) => h('li', {class: st.id === c.id ? 'chain-current' : null},
      st.id === c.id ? h('span', {class: 'mono'}, String(st.id)) : chargeLink(st.id), ' ', badge(st.status), ' ',
      h('span', {class: 'small muted'}, 'created ', time(st.created)),
      st.next_reattempt_at ? h('span', {class: 'small'}, ' · next reattempt ', time(st.next_reattempt_at, {relative: true})) : null,
      st.id === c.id ? h('span', {class: 'small muted'}, ' (this charge)') : null))));
}

class ChargeView {
  constructor(root, id) {
    this.root = root;
    this.id = id;
    this.charge = null;
    this.flash = null; // a notice shown above the charge after an action
    this.reads = 0; // numbers the reads of the charge: only the latest one is shown
    this.draft = {outcome: '', note: ''}; // the resolve form, kept across re-renders: no outcome until the operator picks one
  }

  async load() {
    clear(this.root).appendChild(loading());
    const n = ++this.reads;
    try {
      const c = await request('GET', '/v1/charges/' + encodeURIComponent(this.id));
      if (!this.root.isConnected || n !== this.reads) return;
      this.charge = c;
      this.render();
    } catch (err) {
      if (this.root.isConnected && n === this.reads) clear(this.root).appendChild(errorBox(err));
    }
  }

  /**
   * reload reads the charge again after an action and shows it under the action's flash: the
   * answers of reconcile and resolve carry the charge alone, without its audit trail and
   * reconciliation checks, so the page never renders from them. When the read fails, the
   * charge as last read stays, with a warning under the flash.
   */
  async reload() {
    const n = ++this.reads;
    try {
      const c = await request('GET', '/v1/charges/' + encodeURIComponent(this.id));
      if (!this.root.isConnected || n !== this.reads) return;
      this.charge = c;
    } catch (err) {
      if (!this.root.isConnected || n !== this.reads) return;
      this.flash = [this.flash, errorBox(err,
        h('p', null, 'The action was done, but the charge could not be read again: the timeline below is as it was before. Reload the page to see it now.'))];
    }
    this.render();
  }

  render() {
    const c = this.charge || {};
    clear(this.root);
    if (this.flash) this.root.append(...[this.flash].flat().filter(Boolean));
    this.root.append(
      h('div', {class: 'charge-layout'},
        h('div', {class: 'charge-main'}, this.summary(c), this.timeline(c), chargeEvents(this.id)),
        h('aside', {class: 'charge-side', 'aria-label': 'Actions'}, this.actions(c))));
  }

  summary(c) {
    const d = c.decline && typeof c.decline === 'object' ? c.decline : null;
    const re = d && d.reattempt && typeof d.reattempt === 'object' ? d.reattempt : null;
    const rec = c.reconciliation && typeof c.reconciliation === 'object' ? c.reconciliation : null;
    const meta = c.metadata && typeof c.metadata === 'object' ? Object.entries(c.metadata) : [];
    const checks = rec && Array.isArray(rec.checks) ? rec.checks : [];
    const label = rec && rec.in_review ? reviewLabel({charge: c, review: {reason: rec.review_reason},
      evidence: checks.length ? checks[checks.length - 1] : null, checks}) : null;
    return h('section', {class: 'card', 'aria-labelledby': 'charge-title'},
      h('div', {class: 'charge-head'},
        h('h3', {id: 'charge-title', class: 'mono'}, show(c.id)),
        badge(c.status),
        rec && rec.in_review ? h('span', {class: 'badge flag-review'}, 'in review') : null,
        h('span', {class: 'charge-amount'}, money(c.amount, c.currency))),
      label ? notice('warn', h('p', {class: 'notice-title'}, 'In review: ', label.title),
        h('p', null, label.text),
        label.other ? h('p', null, 'Other charge for the order: ', chargeLink(label.other)) : null,
        h('p', {class: 'small muted'}, 'Reason: ', h('span', {class: 'mono'}, String(rec.review_reason)))) :
        rec && rec.in_review && rec.review_reason ? notice('warn', h('p', null, 'In review: ', String(rec.review_reason))) : null,
      h('div', {class: 'facts'},
        kv([
          ['Reference', c.reference],
          ['Created', time(c.created)],
          ['Processor ref', c.processor_ref ? h('span', {class: 'mono'}, String(c.processor_ref)) : DASH],
          ['Attempts', num(c.attempts)],
          ['Idempotency key', c.idempotency_key ? h('span', {class: 'mono'}, String(c.idempotency_key)) : DASH],
        ]),
        kv([
          ['Payment method', c.payment_method ? h('span', {class: 'mono'}, String(c.payment_method)) : DASH],
          ['Customer', c.customer],
          ['Initiator', c.initiator],
          ['Reattempt mode', c.reattempt],
          ['Reattempt of', c.reattempt_of ? chargeLink(c.reattempt_of) : DASH],
          c.next_reattempt_at ? ['Next reattempt', time(c.next_reattempt_at, {relative: true})] : null,
        ])),
      c.failure ? h('div', {class: 'subcard'}, h('h4', null, 'Failure'),
        kv([['Code', c.failure.code], ['Retryable', c.failure.retryable]])) : null,
      d ? h('div', {class: 'subcard'}, h('h4', null, 'Decline'),
        kv([
          ['Code', d.code], ['Network', d.network], ['Category', d.category], ['Class', badge(d.class, 'class')],
          re ? ['Reattempt allowed', re.allowed] : null,
          re ? ['Not before', time(re.not_before)] : null,
          re ? ['Reason', re.reason] : null,
          re ? ['Remaining in window', re.remaining_in_window] : null,
        ])) : null,
      rec ? h('div', {class: 'subcard'}, h('h4', null, 'Reconciliation'),
        kv([
          ['Checks', num(Array.isArray(rec.checks) ? rec.checks.length : undefined)],
          ['Next check', time(rec.next_check_at, {relative: true})],
          ['In review', rec.in_review],
          ['Review reason', rec.review_reason],
        ])) : null,
      chain(c),
      meta.length ? h('div', {class: 'subcard'}, h('h4', null, 'Metadata'),
        kv(meta.map(([k, v]) => [k, isChargeID(v) ? chargeLink(v) : show(v)]))) : null);
  }

  timeline(c) {
    const items = [];
    let seq = 0;
    // On equal times: creation, the event that opened the charge, attempts, checks, later events.
    const tie = {created: 0, opening: 1, attempt: 2, check: 3, event: 4, future: 5};
    const add = (at, kind, title, ...details) => items.push({at: toDate(at), kind, title, details, seq: seq++, tie: tie[kind]});
    add(c.created, 'created', ['Charge created', ' · ', money(c.amount, c.currency)],
      kv([['Initiator', c.initiator], ['Idempotency key', c.idempotency_key]], 'kv kv-inline'));
    for (const a of Array.isArray(c.attempts_detail) ? c.attempts_detail : []) {
      add(a.started_at, 'attempt',
        [`Attempt ${show(a.n)}`, ' · ', badge(a.class, 'class'),
          a.http_status ? ` · HTTP ${a.http_status}` : ' · no HTTP answer',
          a.processor_code ? ` · ${a.processor_code}` : ''],
        kv([
          ['Duration', `${ms(a.duration_ms)} of a ${ms(a.timeout_ms)} timeout`],
          ['Backoff after', ms(a.backoff_ms)],
          ['Retry-After', a.retry_after_ms ? ms(a.retry_after_ms) : DASH],
          ['Budget tokens', `${num(a.budget_tokens_before)} → ${num(a.budget_tokens_after)}`],
        ], 'kv kv-inline'));
    }
    for (const e of Array.isArray(c.events) ? c.events : []) {
      add(e.at, e.status_before ? 'event' : 'opening',
        [h('strong', null, show(e.action)), ' by ', h('span', {class: 'mono'}, show(e.actor)),
          e.status_before || e.status_after ? [' · ', transition(e.status_before, e.status_after)] : null],
        e.reason ? h('p', null, h('span', {class: 'muted'}, 'Why: '), String(e.reason)) : null,
        e.note ? h('blockquote', {class: 'note'}, String(e.note)) : null,
        e.evidence !== undefined && e.evidence !== null ? disclose('Evidence', jsonView(e.evidence)) : null);
    }
    const rec = c.reconciliation && typeof c.reconciliation === 'object' ? c.reconciliation : null;
    const checks = rec && Array.isArray(rec.checks) ? rec.checks : [];
    checks.forEach((k, i) => {
      const n = k && k.n !== undefined ? k.n : i + 1;
      add(k && k.at, 'check', [`Reconciliation check ${show(n)}`, evidenceSummary(k) ? ' · ' + evidenceSummary(k) : ''],
        disclose('Check JSON', jsonView(k)));
    });
    if (c.next_reattempt_at && toDate(c.next_reattempt_at)) {
      add(c.next_reattempt_at, 'future', 'Automatic reattempt scheduled');
    }
    if (rec && rec.next_check_at && toDate(rec.next_check_at)) {
      add(rec.next_check_at, 'future', 'Next reconciliation check scheduled');
    }
    items.sort((x, y) => {
      if (x.at && y.at && x.at.getTime() !== y.at.getTime()) return x.at - y.at;
      if (!x.at !== !y.at) return x.at ? -1 : 1;
      return (x.tie - y.tie) || (x.seq - y.seq);
    });
    const kindLabel = {created: 'created', attempt: 'attempt', opening: 'state change', event: 'state change', check: 'check', future: 'scheduled'};
    return h('section', {class: 'card', 'aria-labelledby': 'timeline-title'},
      h('h3', {id: 'timeline-title'}, 'Timeline'),
      h('p', {class: 'legend small'},
        ['attempt', 'event', 'check'].map((k) => h('span', {class: `legend-item tl-${k}`}, h('span', {class: 'tl-dot', 'aria-hidden': 'true'}), kindLabel[k]))),
      h('ol', {class: 'timeline'}, items.map((it) =>
        h('li', {class: `tl-item tl-${it.kind === 'opening' ? 'event' : it.kind}`},
          h('div', {class: 'tl-when'}, it.at ? time(it.at) : DASH),
          h('div', {class: 'tl-dot', 'aria-hidden': 'true'}),
          h('div', {class: 'tl-body'},
            h('p', {class: 'tl-title'}, h('span', {class: 'visually-hidden'}, kindLabel[it.kind] + ': '), it.title),
            it.details)))));
  }

  actions(c) {
    const rec = c.reconciliation && typeof c.reconciliation === 'object' ? c.reconciliation : null;
    if (role() !== 'operator') {
      return h('section', {class: 'card', 'aria-labelledby': 'act-title'},
        h('h3', {id: 'act-title'}, 'Read only'),
        h('p', {class: 'small'}, 'An auditor key reads the charge, its audit trail and its checks. Operators reconcile and resolve.'));
    }
    // What the API allows: a check and a manual resolution apply to a pending charge, or to
    // one in review (reopened by evidence against a resolution).
    if (c.status !== 'pending' && !(rec && rec.in_review)) {
      return h('section', {class: 'card', 'aria-labelledby': 'act-title'},
        h('h3', {id: 'act-title'}, 'Nothing to settle'),
        h('p', {class: 'small'}, 'This charge is ', badge(c.status), '. Querying the processor and manual resolution ' +
          'apply to pending charges and charges in review.'));
    }
    const status = h('div', {'aria-live': 'polite'});
    const reconcileBtn = h('button', {type: 'button', id: 'reconcile-now', class: 'btn btn-primary', onclick: () => this.reconcile(reconcileBtn, status)},
      'Query processor now');
    const reconcileBox = h('section', {class: 'card', 'aria-labelledby': 'rec-title'},
      h('h3', {id: 'rec-title'}, 'Reconcile'),
      h('p', {class: 'small'}, 'Ask the processor what it has for this charge now. A conclusive answer settles it; ' +
        'an inconclusive one opens manual resolution for a few minutes.'),
      reconcileBtn, status);

    const noteId = 'resolve-note';
    const noteErr = h('p', {id: 'resolve-note-error', class: 'field-error', hidden: true}, 'A note is required: say what you checked and why.');
    const note = h('textarea', {id: noteId, rows: '3', required: true, 'aria-describedby': 'resolve-note-help',
      oninput: () => { this.draft.note = note.value; }});
    note.value = this.draft.note;
    const outcomeErr = h('p', {id: 'resolve-outcome-error', class: 'field-error', hidden: true}, 'Choose an outcome: none is preselected.');
    const radios = OUTCOMES.map(([value, label, help]) =>
      h('label', {class: 'radio'},
        h('input', {type: 'radio', name: 'outcome', value, checked: this.draft.outcome === value,
          onchange: () => { this.draft.outcome = value; outcomeErr.hidden = true; }}),
        h('span', null, h('strong', null, label), h('span', {class: 'muted small'}, ' — ' + help))));
    const result = h('div', {'aria-live': 'polite'});
    const submit = h('button', {type: 'submit', id: 'resolve-submit', class: 'btn btn-danger'}, 'Resolve…');
    const form = h('form', {class: 'resolve-form', novalidate: true, onsubmit: (ev) => {
      ev.preventDefault();
      const chosen = form.querySelector('input[name="outcome"]:checked');
      const text = note.value.trim();
      outcomeErr.hidden = Boolean(chosen);
      if (!chosen) {
        form.querySelector('input[name="outcome"]').focus();
        return;
      }
      if (!text) {
        noteErr.hidden = false;
        note.setAttribute('aria-invalid', 'true');
        note.setAttribute('aria-describedby', 'resolve-note-help resolve-note-error');
        note.focus();
        return;
      }
      noteErr.hidden = true;
      note.removeAttribute('aria-invalid');
      this.resolve(chosen.value, text, submit, result, reconcileBtn, status);
    }},
    h('fieldset', null, h('legend', null, 'Outcome'), radios, outcomeErr),
    h('label', {for: noteId, class: 'field-label'}, 'Note (required)'),
    h('p', {id: 'resolve-note-help', class: 'small muted'}, 'Kept in the audit trail with your key, the time, the evidence and the state before and after.'),
    note, noteErr, submit, result);
    const resolveBox = h('section', {class: 'card', 'aria-labelledby': 'res-title'},
      h('h3', {id: 'res-title'}, 'Resolve manually'),
      h('p', {class: 'small'}, 'Allowed only after a reconciliation in the last few minutes found nothing conclusive. ',
        'Current status: ', badge(c.status), '.'),
      form);
    return [reconcileBox, resolveBox];
  }

  async reconcile(btn, status) {
    btn.disabled = true;
    clear(status).appendChild(loading('Querying the processor…'));
    let res;
    try {
      res = await request('POST', '/v1/charges/' + encodeURIComponent(this.id) + '/reconcile');
    } catch (err) {
      btn.disabled = false;
      if (status.isConnected) {
        clear(status).appendChild(errorBox(err));
        status.scrollIntoView({block: 'nearest'});
      }
      return;
    }
    if (!this.root.isConnected) return;
    // The answer is the charge without its timeline and the check: its result is shown
    // here, the charge as read again below.
    const check = res && res.check && typeof res.check === 'object' ? res.check : null;
    const after = res && res.charge && typeof res.charge === 'object' ? res.charge.status : undefined;
    const summary = check ? evidenceSummary(check) || 'check recorded' : 'the charge had settled: nothing to check';
    this.flash = notice('info', h('p', {class: 'notice-title'}, 'Processor queried: ' + summary),
      after ? h('p', null, 'Status now ', badge(after), '.') : null,
      check ? disclose('Check JSON', jsonView(check)) : null);
    toast('Processor queried: ' + summary, 'info');
    clear(status).appendChild(loading('Reading the charge again…'));
    await this.reload();
  }

  async resolve(outcome, text, submit, result, reconcileBtn, reconcileStatus) {
    const c = this.charge || {};
    const ok = await confirm({
      title: `Resolve ${c.id || this.id}?`,
      body: [
        h('p', {class: 'dialog-transition'}, transition(c.status, outcome)),
        kv([['Amount', money(c.amount, c.currency)], ['Reference', c.reference]]),
        h('p', {class: 'small muted'}, 'Note:'),
        h('blockquote', {class: 'note'}, text),
        h('p', {class: 'small'}, 'This is recorded in the append-only audit trail with your key.'),
      ],
      confirmLabel: `Resolve as ${outcome}`,
      danger: true,
    });
    if (!ok) return;
    submit.disabled = true;
    clear(result).appendChild(loading('Resolving…'));
    try {
      await request('POST', '/v1/charges/' + encodeURIComponent(this.id) + '/resolve', {body: {outcome, note: text}});
    } catch (err) {
      submit.disabled = false;
      if (!result.isConnected) return;
      if (err.code === 'reconcile_first') {
        const again = h('button', {type: 'button', class: 'btn btn-primary', onclick: () => {
          again.disabled = true;
          this.reconcile(reconcileBtn, reconcileStatus);
        }}, 'Query processor now');
        clear(result).appendChild(errorBox(err,
          h('p', null, 'Query the processor first; if it finds nothing conclusive, resolve again within a few minutes.'),
          again));
      } else if (err.code === 'attempt_in_flight') {
        const until = typeof err.body.in_flight_until === 'string' ? new Date(err.body.in_flight_until) : null;
        const when = until && !isNaN(until) ? until.toLocaleString() : 'a while';
        clear(result).appendChild(errorBox(err,
          h('p', null, `An attempt may still be executing at the processor until ${when}: query the processor after that, then resolve.`)));
      } else {
        clear(result).appendChild(errorBox(err));
      }
      result.scrollIntoView({block: 'nearest'});
      return;
    }
    if (!this.root.isConnected) return;
    // The answer is the charge without its timeline: the page shows the charge as read again.
    this.draft = {outcome: '', note: ''};
    this.flash = notice('ok', h('p', {class: 'notice-title'}, `Resolved as ${outcome}.`),
      h('p', null, 'The change and your note are in the audit trail below.'));
    toast(`Charge resolved as ${outcome}`);
    clear(result).appendChild(loading('Reading the charge again…'));
    await this.reload();
  }
}
