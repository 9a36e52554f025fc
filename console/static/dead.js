// Dead letters: background jobs that ran out of attempts, and their replay.

import {request, getKey, role} from './api.js';
import {h, clear, show, num, time, badge, jsonView, disclose, notice, errorBox, loading, table, confirm, toast, chargeLink, isChargeID, DASH} from './dom.js';

const PAGE = 50;

// chargeOf finds a charge id in a job's arguments, for a direct link.
function chargeOf(args) {
  if (!args || typeof args !== 'object') return '';
  for (const k of ['charge_id', 'charge', 'id']) if (isChargeID(args[k])) return args[k];
  return '';
}

function lastError(job) {
  const errs = Array.isArray(job.errors) ? job.errors : [];
  return errs.length ? errs[errs.length - 1] : null;
}

/** renderDead fills section with the dead-letter queue, a page at a time. */
export function renderDead(section) {
  const body = h('div');
  const refresh = h('button', {type: 'button', class: 'btn btn-quiet', onclick: () => load(cursors[cursors.length - 1])}, 'Refresh');
  section.append(
    h('div', {class: 'view-head'}, h('h2', null, 'Dead letters'), h('div', {class: 'view-tools'}, refresh)),
    h('p', {class: 'lede'}, 'Background jobs that failed their last attempt. Replay runs one again now; ' +
      'the replay is recorded on the job. A replay the gateway judges unsafe is refused with the reason.'),
    body);
  if (!getKey()) {
    refresh.disabled = true;
    return;
  }
  if (role() !== 'operator') {
    // The dead-letter queue and its replay are the operators' alone.
    refresh.disabled = true;
    body.appendChild(notice('info', h('p', {class: 'notice-title'}, 'Dead letters are for operators.'),
      h('p', null, 'An auditor key reads the review queue, the charges and the reattempt report.')));
    return;
  }
  const cursors = ['']; // the cursor of each page seen, for "Previous"

  async function replay(job, btn, stateCell) {
    const err = lastError(job);
    const ok = await confirm({
      title: `Replay job ${job.id}?`,
      body: [
        h('p', null, `${show(job.kind)} on queue ${show(job.queue)} runs again now, with the same arguments.`),
        err ? h('p', {class: 'small'}, 'Its last error: ', h('span', {class: 'mono'}, show(err.error))) : null,
        h('p', {class: 'small muted'}, 'The replay is recorded on the job with your key.'),
      ],
      confirmLabel: 'Replay',
    });
    if (!ok) return;
    btn.disabled = true;
    try {
      const updated = await request('POST', `/v1/jobs/${encodeURIComponent(job.id)}/replay`);
      if (!stateCell.isConnected) return;
      clear(stateCell).appendChild(badge(updated && updated.state ? updated.state : 'replayed', 'job'));
      btn.textContent = 'Replayed';
      toast(`Job ${job.id} replayed${updated && updated.state ? ': ' + updated.state : ''}`);
    } catch (e) {
      btn.disabled = false;
      toast(`Job ${job.id} not replayed: ${e.message}`, 'error');
      const row = stateCell.closest('tr');
      const msgRow = h('tr', {class: 'row-message'}, h('td', {colspan: '7'}, errorBox(e)));
      if (row && row.nextSibling && row.nextSibling.classList && row.nextSibling.classList.contains('row-message')) row.nextSibling.remove();
      if (row) row.after(msgRow);
    }
  }

  function row(job) {
    const stateCell = h('td', null, badge(job.state, 'job'));
    const btn = h('button', {type: 'button', class: 'btn btn-small replay'}, 'Replay…');
    btn.addEventListener('click', () => replay(job, btn, stateCell));
    const err = lastError(job);
    const errs = Array.isArray(job.errors) ? job.errors : [];
    const charge = chargeOf(job.args);
    return h('tr', null,
      h('td', {class: 'mono'}, show(job.id)),
      h('td', null, h('div', {class: 'mono'}, show(job.kind)),
        h('div', {class: 'small muted'}, `queue ${show(job.queue)} · attempts ${num(job.attempts)} / ${num(job.max_attempts)}`)),
      stateCell,
      h('td', {class: 'small'}, show(job.merchant_id ?? job.merchant), charge ? h('div', null, chargeLink(charge)) : null),
      h('td', {class: 'small'}, h('div', {class: 'muted'}, 'created'), h('div', null, time(job.created_at)),
        h('div', {class: 'muted'}, 'dead since'), h('div', null, time(job.finalized_at))),
      h('td', {class: 'error-cell'},
        err ? h('div', {class: 'mono small clamp'}, show(err.error)) : DASH,
        errs.length ? disclose(errs.length === 1 ? '1 error' : `All ${errs.length} errors`,
          h('ol', {class: 'plain small'}, errs.map((e) => h('li', null, `#${show(e.attempt)} `, time(e.at), ' ',
            h('span', {class: 'mono'}, show(e.error)))))) : null,
        job.args !== undefined ? disclose('Arguments', jsonView(job.args)) : null),
      h('td', null, btn));
  }

  async function load(cursor) {
    clear(body).appendChild(loading());
    refresh.disabled = true;
    try {
      const res = await request('GET', '/v1/jobs/dead', {query: {limit: PAGE, cursor}});
      if (!body.isConnected) return;
      const jobs = Array.isArray(res && res.data) ? res.data : [];
      clear(body);
      const page = cursors.length;
      if (!jobs.length && page === 1) {
        body.appendChild(notice('ok', h('p', {class: 'notice-title'}, 'No dead letters.')));
        return;
      }
      body.appendChild(table(['Job', 'Kind', 'State', 'Merchant / charge', 'When', 'Errors', ''],
        jobs.filter((j) => j && typeof j === 'object').map(row), {caption: `Dead letters, page ${page}`}));
      const prev = h('button', {type: 'button', class: 'btn btn-quiet', disabled: page === 1, onclick: () => {
        cursors.pop();
        load(cursors[cursors.length - 1]);
      }}, '← Previous');
      const next = h('button', {type: 'button', class: 'btn btn-quiet', disabled: !(res.has_more && res.next_cursor), onclick: () => {
        cursors.push(res.next_cursor);
        load(res.next_cursor);
      }}, 'Next →');
      body.appendChild(h('div', {class: 'pager'}, prev, h('span', {class: 'small muted'}, `Page ${page}`), next));
    } catch (err) {
      if (body.isConnected) clear(body).appendChild(errorBox(err));
    } finally {
      refresh.disabled = false;
    }
  }
  load('');
}
