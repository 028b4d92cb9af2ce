// The inspector's shell: the connection form (key and profile), the
// navigation between pages, and each page rendered from the URL.
import { conn, call } from './api.js';
import { clear } from './dom.js';
import * as memories from './memories.js';
import * as recall from './recall.js';
import * as evalview from './evalview.js';

const pages = { memories, recall, eval: evalview };

function pageName() {
  const name = location.pathname.replace(/^\/ui\/?/, '').replace(/\/$/, '');
  return pages[name] ? name : 'memories';
}

let current = null;

function render() {
  const name = pageName();
  for (const a of document.querySelectorAll('nav a[data-page]')) {
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('main');
  if (current?.leave) current.leave();
  clear(main);
  current = pages[name];
  document.title = 'mnemo inspector · ' + (name === 'eval' ? 'Eval' : name[0].toUpperCase() + name.slice(1));
  current.render(main);
}

function navigate(href) {
  history.pushState(null, '', href);
  render();
  document.getElementById('main').focus();
}

function setupConnection() {
  const form = document.getElementById('conn');
  const key = document.getElementById('conn-key');
  const profile = document.getElementById('conn-profile');
  const status = document.getElementById('conn-status');
  const fromURL = new URLSearchParams(location.search).get('profile');
  if (fromURL !== null) conn.profile = fromURL;
  key.value = conn.key;
  profile.value = conn.profile;
  const check = async () => {
    document.getElementById('err-conn-profile').textContent = '';
    status.textContent = 'checking…';
    try {
      await call('GET', '/v1/settings');
      status.textContent = (conn.key ? 'key accepted' : 'no key (single-user mode)') + (conn.profile ? ', profile ' + conn.profile : '');
      status.className = 'status ok';
    } catch (e) {
      status.className = 'status bad';
      if (e.field === 'profile' || /profile/i.test(e.message) && e.status === 400) {
        document.getElementById('err-conn-profile').textContent = e.message;
        status.textContent = '';
      } else {
        status.textContent = e.message;
      }
    }
  };
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    conn.key = key.value.trim();
    conn.profile = profile.value.trim();
    const q = new URLSearchParams(location.search);
    if (conn.profile) q.set('profile', conn.profile); else q.delete('profile');
    const qs = q.toString();
    history.replaceState(null, '', location.pathname + (qs ? '?' + qs : ''));
    check();
    render();
  });
  document.getElementById('conn-forget').addEventListener('click', () => {
    conn.key = '';
    key.value = '';
    check();
    render();
  });
  check();
}

document.addEventListener('click', ev => {
  const a = ev.target.closest('a[data-page]');
  if (!a || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
  ev.preventDefault();
  const q = conn.profile ? '?profile=' + encodeURIComponent(conn.profile) : '';
  navigate('/ui/' + a.dataset.page + q);
});
window.addEventListener('popstate', render);

setupConnection();
render();
