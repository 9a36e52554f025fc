// The operator console: key handling, tabs and hash routes.
//
// Routes: #/review, #/charge, #/charge/{id}, #/report[?from=YYYY-MM-DD&to=YYYY-MM-DD], #/dead, #/endpoints.

import {getKey, setKey, forgetKey, checkKey, identity, role} from './api.js';
import {h, clear, notice} from './dom.js';
import {renderReview} from './review.js';
import {renderCharge} from './charge.js';
import {renderReport} from './report.js';
import {renderDead} from './dead.js';
import {renderEndpoints} from './events.js';

const views = {
  review: renderReview,
  charge: renderCharge,
  report: renderReport,
  dead: renderDead,
  endpoints: renderEndpoints,
};

/** route reads the hash: {name, arg, params}. */
function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, qs = ''] = raw.split('?');
  const [name, ...rest] = path.split('/');
  let arg = '';
  try {
    arg = decodeURIComponent(rest.join('/'));
  } catch {
    arg = '';
  }
  return {name: views[name] ? name : 'review', arg, params: new URLSearchParams(qs)};
}

function renderKeyState() {
  const state = document.getElementById('key-state');
  const forget = document.getElementById('key-forget');
  const who = identity();
  const has = getKey() !== '' && who !== null;
  state.textContent = has ? `${who.role} · merchant ${who.merchant}` : 'No key';
  state.className = has ? 'key-state key-on' : 'key-state key-off';
  forget.disabled = !has;
  // Dead letters and their replay are the operators' alone.
  for (const a of document.querySelectorAll('.tabs a[data-role]')) {
    a.parentElement.hidden = has && a.dataset.role !== who.role;
  }
}

/** keyRefusal says why key cannot be used, or "" when it can. */
function keyRefusal(err) {
  if (err.status === 401) return 'Unknown or revoked key';
  return err.message || 'The key could not be checked';
}

let firstRender = true;

function render() {
  renderKeyState();
  const r = route();
  for (const a of document.querySelectorAll('.tabs a')) {
    if (a.dataset.route === r.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = clear(document.getElementById('main'));
  const section = h('section', {class: 'view', 'aria-labelledby': 'view-title'});
  main.appendChild(section);
  if (!getKey()) {
    section.appendChild(notice('info',
      h('p', {class: 'notice-title'}, 'Paste your API key above to start.'),
      h('p', null, 'The key stays in this browser tab only (sessionStorage) and is sent as an Authorization header; ' +
        'it never appears in a URL. Operators can review, reconcile, resolve and replay; auditors read the review queue, ' +
        'the charges and the reattempt report.')));
  }
  views[r.name](section, r.arg, r.params);
  const title = section.querySelector('h2');
  if (title) {
    title.id = 'view-title';
    title.setAttribute('tabindex', '-1');
    if (!firstRender) title.focus({preventScroll: false});
  }
  document.title = (title ? title.textContent + ' · ' : '') + 'paygate operator console';
  firstRender = false;
}

function boot() {
  if (getKey() && !role()) forgetKey();
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  const state = document.getElementById('key-state');
  const refuse = (text) => {
    state.textContent = text;
    state.className = 'key-state key-off';
    input.focus();
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    input.value = '';
    if (!key || /[^\x21-\x7e]/.test(key)) {
      refuse(key ? 'That is not an API key (printable characters, no spaces)' : 'Paste a key first');
      return;
    }
    // The key is checked once, here: the console keeps only a key the gateway knows, with
    // its role, and shows each action only to the role that may take it.
    state.textContent = 'Checking the key…';
    state.className = 'key-state';
    let who;
    try {
      who = await checkKey(key);
    } catch (err) {
      refuse(keyRefusal(err));
      return;
    }
    if (who.role !== 'operator' && who.role !== 'auditor') {
      refuse(`A ${who.role} key cannot use the console: paste an operator or auditor key`);
      return;
    }
    setKey(key, who);
    render();
  });
  document.getElementById('key-forget').addEventListener('click', () => {
    forgetKey();
    input.value = '';
    render();
    input.focus();
  });
  window.addEventListener('hashchange', render);
  render();
}

boot();
