// The operator console: key handling, tabs and hash routes.
//
// Routes: #/review, #/charge, #/charge/{id}, #/report[?from=YYYY-MM-DD&to=YYYY-MM-DD], #/dead.

import {getKey, setKey, forgetKey} from './api.js';
import {h, clear, notice} from './dom.js';
import {renderReview} from './review.js';
import {renderCharge} from './charge.js';
import {renderReport} from './report.js';
import {renderDead} from './dead.js';

const views = {
  review: renderReview,
  charge: renderCharge,
  report: renderReport,
  dead: renderDead,
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
  const has = getKey() !== '';
  state.textContent = has ? 'Key in use for this tab' : 'No key';
  state.className = has ? 'key-state key-on' : 'key-state key-off';
  forget.disabled = !has;
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
        'it never appears in a URL. Operators can review, reconcile, resolve and replay; auditors can read the reattempt report.')));
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
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    input.value = '';
    if (!key || /[^\x21-\x7e]/.test(key)) {
      const state = document.getElementById('key-state');
      state.textContent = key ? 'That is not an API key (printable characters, no spaces)' : 'Paste a key first';
      state.className = 'key-state key-off';
      input.focus();
      return;
    }
    setKey(key);
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
