// memtool web: the memory browser. One more client of memtool server's API
// (/v1/memory_stores/...) and of memtool's own calls beside it
// (/memtool/v1/...). Every name and content is put on the page as text
// (textContent, never innerHTML), and nothing is loaded from elsewhere.
'use strict';

(function () {
  const PAGE_LINES = 400;
  const state = {
    csrf: null,
    stores: [],
    store: null,
    memories: [],
    current: null, // the memory shown: the API's object, full
    lastVersion: null,
    linePage: 0,
  };

  const $ = (id) => document.getElementById(id);
  const view = () => $('view');

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function status(text, isError, action) {
    const s = $('status');
    s.replaceChildren(text || '');
    s.className = isError ? 'error' : '';
    if (action) s.append(el('button', { type: 'button', onclick: action.run, text: action.label }));
  }

  async function api(method, path, body) {
    const headers = {};
    if (method !== 'GET') headers['x-csrf-token'] = state.csrf || '';
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(path, {
      cache: 'no-store',
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let json = null;
    try { json = await r.json(); } catch (e) { json = null; }
    // 401 on anything but the login: the session ended (unused too long, past
    // its lifetime, or its key revoked). The page says so and asks again,
    // rather than failing every click from now on.
    if (r.status === 401 && path !== 'session' && !state.relogin) {
      state.relogin = true;
      state.csrf = null;
      status('The session ended (it expired, or its key was revoked): log in again.', true);
      login().then(async (ok) => {
        state.relogin = false;
        if (ok) { await loadStores(); await loadTree(); }
      });
    }
    return { status: r.status, ok: r.ok, json };
  }

  function errorText(r) {
    const m = r.json && r.json.error && r.json.error.message;
    return m ? m : 'the server answered ' + r.status;
  }

  const sPath = () => '/v1/memory_stores/' + encodeURIComponent(state.store);
  const mPath = () => '/memtool/v1/memory_stores/' + encodeURIComponent(state.store);

  function fmtTime(t) {
    if (!t) return '';
    const d = new Date(t);
    return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  function fmtSize(n) {
    if (n === null || n === undefined) return '';
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1048576).toFixed(1) + ' MiB';
  }

  function actorName(by) {
    if (!by) return 'external';
    return by.user_id || by.api_key_id || by.session_id || by.type || '?';
  }

  function baseName(path) {
    const parts = path.split('/');
    return parts[parts.length - 1] || path;
  }

  // --- login -------------------------------------------------------------

  // The session: "session" is beside the page (/session for memtool web,
  // /ui/session for memtool server's page).
  async function login() {
    const params = new URLSearchParams(location.search);
    const token = params.get('token');
    if (token) {
      // The token leaves the address bar (and the history) at once.
      history.replaceState(null, '', location.pathname);
      const r = await api('POST', 'session', { token });
      if (r.ok) { state.csrf = r.json.csrf_token; return true; }
    }
    const r = await api('GET', 'session');
    if (r.ok) { state.csrf = r.json.csrf_token; return true; }
    if (r.json && r.json.login === 'key') return keyLogin();
    view().replaceChildren(el('p', { text: 'No session. Open the address that memtool web printed (it works once), or start memtool web again.' }));
    return false;
  }

  // memtool server's page: a person logs in with an API key, once; the
  // session cookie does the rest (and ends when the key is revoked).
  function keyLogin() {
    return new Promise((resolve) => {
      const input = el('input', { id: 'login-key', type: 'password', autocomplete: 'off', required: true });
      const form = el('form', { class: 'inline' },
        el('label', { for: 'login-key', text: 'API key' }), input,
        el('button', { type: 'submit', class: 'primary', text: 'Log in' }));
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        const r = await api('POST', 'session', { key: input.value });
        input.value = '';
        if (!r.ok) { status(errorText(r), true); return; }
        status('');
        state.csrf = r.json.csrf_token;
        resolve(true);
      });
      view().replaceChildren(el('h2', { text: 'Log in' }), form);
      input.focus();
    });
  }

  // --- stores and the tree --------------------------------------------

  async function loadStores() {
    const r = await api('GET', '/v1/memory_stores?limit=100');
    if (!r.ok) { status(errorText(r), true); return; }
    state.stores = r.json.data.slice().sort((a, b) => (a.id === 'memstore_0000000000000000' ? -1 : b.id === 'memstore_0000000000000000' ? 1 : 0));
    const sel = $('store');
    sel.replaceChildren(...state.stores.map((s) =>
      el('option', { value: s.id, text: s.id === 'memstore_0000000000000000' ? s.name : s.name + ' (' + s.id + ')' })));
    state.store = state.stores.length ? state.stores[0].id : null;
    sel.value = state.store;
  }

  async function loadTree() {
    if (!state.store) return;
    const all = [];
    let page = null;
    do {
      const q = '?limit=100' + (page ? '&page=' + encodeURIComponent(page) : '');
      const r = await api('GET', sPath() + '/memories' + q);
      if (!r.ok) { status(errorText(r), true); return; }
      all.push(...r.json.data.filter((m) => m.type === 'memory'));
      page = r.json.next_page;
    } while (page);
    state.memories = all;
    renderTree();
  }

  function renderTree() {
    const filter = $('filter').value.toLowerCase();
    const tree = $('tree');
    const shown = state.memories.filter((m) => !filter || m.path.toLowerCase().includes(filter));
    tree.replaceChildren();
    if (!shown.length) {
      tree.append(el('li', { class: 'meta', text: state.memories.length ? 'No memory matches the filter.' : 'No memories yet.' }));
      return;
    }
    let lastDir = null;
    for (const m of shown) {
      const dir = m.path.slice(0, m.path.lastIndexOf('/') + 1);
      if (dir !== lastDir) {
        tree.append(el('li', { class: 'dir', 'aria-hidden': 'true', text: dir }));
        lastDir = dir;
      }
      const current = state.current && state.current.id === m.id;
      const b = el('button', {
        type: 'button', 'aria-label': baseName(m.path), title: m.path,
        'aria-current': current ? 'true' : null, 'data-id': m.id,
        onclick: () => openMemory(m.id),
      }, baseName(m.path));
      tree.append(el('li', { class: 'mem' }, b,
        el('span', { class: 'meta', text: fmtSize(m.content_size_bytes) + ' \u00b7 ' + fmtTime(m.updated_at) })));
    }
  }

  // --- a memory -------------------------------------------------------

  function highlightLine(line, kind) {
    // Light highlighting, all as text nodes in spans: a link stays text.
    const out = [];
    if (kind === 'md') {
      if (/^#{1,6}\s/.test(line)) return [el('span', { class: 'h-head', text: line })];
      const re = /(`[^`]+`)|(\b(?:https?|javascript|data):[^\s)]+)/gi;
      let i = 0, m;
      while ((m = re.exec(line))) {
        if (m.index > i) out.push(line.slice(i, m.index));
        out.push(el('span', { class: m[1] ? 'h-code' : 'h-link', text: m[0] }));
        i = m.index + m[0].length;
      }
      out.push(line.slice(i));
      return out;
    }
    if (kind === 'json') {
      const re = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)/g;
      let i = 0, m;
      while ((m = re.exec(line))) {
        if (m.index > i) out.push(line.slice(i, m.index));
        if (m[1]) {
          out.push(el('span', { class: m[2] ? 'h-key' : 'h-str', text: m[1] }));
          if (m[2]) out.push(m[2]);
        } else out.push(el('span', { class: 'h-num', text: m[3] }));
        i = m.index + m[0].length;
      }
      out.push(line.slice(i));
      return out;
    }
    return [line];
  }

  function codeBlock(text, kind, first) {
    const lines = text.split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const box = el('div', { class: 'code', role: 'region', 'aria-label': 'Content', tabindex: '0' });
    lines.forEach((line, i) => {
      box.append(el('div', { class: 'ln' },
        el('span', { class: 'no', 'aria-hidden': 'true', text: String(first + i) }),
        el('span', { class: 'tx' }, ...highlightLine(line, kind))));
    });
    return box;
  }

  function kindOf(path) {
    if (/\.json$/i.test(path)) return 'json';
    if (/\.(md|markdown)$/i.test(path)) return 'md';
    return 'text';
  }

  async function openMemory(id, keepPage) {
    const r = await api('GET', sPath() + '/memories/' + encodeURIComponent(id));
    if (!r.ok) { status(errorText(r), true); return; }
    state.current = r.json;
    if (!keepPage) state.linePage = 0;
    const v = await api('GET', sPath() + '/memory_versions?memory_id=' + encodeURIComponent(id) + '&limit=1');
    state.lastVersion = v.ok && v.json.data.length ? v.json.data[0] : null;
    renderTree();
    renderMemory();
  }

  function renderMemory() {
    const m = state.current;
    const lv = state.lastVersion;
    const lines = m.content.split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const pages = Math.max(1, Math.ceil(lines.length / PAGE_LINES));
    const p = Math.min(state.linePage, pages - 1);
    const slice = lines.slice(p * PAGE_LINES, (p + 1) * PAGE_LINES).join('\n');
    const parts = [
      el('h2', { text: m.path }),
      el('p', { class: 'meta', text: fmtSize(m.content_size_bytes) + (lv ? ' \u00b7 last changed by ' + actorName(lv.created_by) + ', ' + fmtTime(lv.created_at) : '') }),
      el('div', { class: 'actions' },
        el('button', { type: 'button', id: 'edit', onclick: editMemory, text: 'Edit' }),
        el('button', { type: 'button', id: 'rename', onclick: renameMemory, text: 'Rename' }),
        el('button', { type: 'button', id: 'delete', class: 'danger', onclick: deleteMemory, text: 'Delete' }),
        el('button', { type: 'button', id: 'history-of-memory', onclick: () => showHistory(m.id), text: 'History' })),
    ];
    if (pages > 1) {
      parts.push(el('div', { class: 'pager' },
        el('button', { type: 'button', disabled: p === 0, onclick: () => { state.linePage = p - 1; renderMemory(); }, text: 'Previous lines' }),
        el('span', { text: 'Lines ' + (p * PAGE_LINES + 1) + '\u2013' + Math.min(lines.length, (p + 1) * PAGE_LINES) + ' of ' + lines.length }),
        el('button', { type: 'button', disabled: p >= pages - 1, onclick: () => { state.linePage = p + 1; renderMemory(); }, id: 'next-lines', text: 'Next lines' })));
    }
    parts.push(codeBlock(slice, kindOf(m.path), p * PAGE_LINES + 1));
    view().replaceChildren(...parts);
  }

  // --- edit, with the SHA-256 seen as the precondition ------------------

  function editMemory() {
    const m = state.current;
    const base = { content: m.content, sha: m.content_sha256 };
    const ta = el('textarea', { id: 'editor', 'aria-label': 'Content of ' + m.path });
    ta.value = m.content;
    const form = el('form', { class: 'editing' },
      el('h2', { text: 'Editing ' + m.path }), ta,
      el('div', { class: 'actions' },
        el('button', { type: 'submit', id: 'save', class: 'primary', text: 'Save' }),
        el('button', { type: 'button', onclick: renderMemory, text: 'Cancel' })));
    form.addEventListener('submit', (e) => { e.preventDefault(); save(m.id, ta.value, base); });
    view().replaceChildren(form);
    ta.focus();
  }

  async function save(id, content, base) {
    const r = await api('POST', sPath() + '/memories/' + encodeURIComponent(id),
      { content, precondition: { type: 'content_sha256', content_sha256: base.sha } });
    if (r.ok) {
      status('Saved ' + r.json.path + '.');
      await loadTree();
      await openMemory(id, true);
      return;
    }
    if (r.status === 409 && r.json && r.json.error && r.json.error.type === 'memory_precondition_failed_error') {
      const now = await api('GET', sPath() + '/memories/' + encodeURIComponent(id));
      if (!now.ok) { status('The memory was changed meanwhile, and could not be read: ' + errorText(now), true); return; }
      conflict(id, base, content, now.json);
      return;
    }
    status(errorText(r), true);
  }

  // Someone else (the agent) wrote the memory meanwhile: both sides are
  // shown beside what the edit started from; nothing is overwritten until
  // the person chooses.
  function conflict(id, base, mine, theirs) {
    status('This memory was changed while you edited it. Choose what to keep.', true);
    const mineTa = el('textarea', { id: 'conflict-mine', 'aria-label': 'Your version (editable)' });
    mineTa.value = mine;
    const theirsTa = el('textarea', { id: 'conflict-theirs', 'aria-label': 'The version saved meanwhile', readonly: true });
    theirsTa.value = theirs.content;
    const baseTa = el('textarea', { id: 'conflict-base', 'aria-label': 'The version you started from', readonly: true });
    baseTa.value = base.content;
    const useTheirs = () => { status('Kept the version saved meanwhile.'); openMemory(id); };
    const keepMine = () => save(id, mineTa.value, { content: theirs.content, sha: theirs.content_sha256 });
    view().replaceChildren(
      el('h2', { text: 'Conflict on ' + theirs.path }),
      el('p', { text: 'Keep yours (edit it first to merge by hand), or take the version saved meanwhile. Saving yours replaces only the version shown here in the middle: if it changes again, you are asked again.' }),
      el('div', { class: 'three' },
        el('div', {}, el('h3', { text: 'Yours' }), mineTa),
        el('div', {}, el('h3', { text: 'Saved meanwhile (by ' + (theirs.memory_version_id || '') + ')' }), theirsTa),
        el('div', {}, el('h3', { text: 'What you started from' }), baseTa)),
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', id: 'keep-mine', onclick: keepMine, text: 'Save mine' }),
        el('button', { type: 'button', id: 'take-theirs', onclick: useTheirs, text: 'Take theirs' })));
    mineTa.focus();
  }

  // --- create, rename, delete (with undo) -----------------------------

  function newMemory() {
    const path = el('input', { id: 'new-path', type: 'text', value: '/', required: true });
    const ta = el('textarea', { id: 'new-content' });
    const form = el('form', {},
      el('h2', { text: 'New memory' }),
      el('p', {}, el('label', { for: 'new-path', text: 'Path ' }), path),
      el('p', {}, el('label', { for: 'new-content', text: 'Content' })), ta,
      el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary', text: 'Create' })));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const r = await api('POST', sPath() + '/memories', { path: path.value, content: ta.value });
      if (!r.ok) { status(errorText(r), true); return; }
      status('Created ' + r.json.path + '.');
      await loadTree();
      openMemory(r.json.id);
    });
    view().replaceChildren(form);
    path.focus();
  }

  function renameMemory() {
    const m = state.current;
    const input = el('input', { id: 'rename-path', type: 'text', value: m.path });
    const form = el('form', { class: 'inline' },
      el('label', { for: 'rename-path', text: 'New path' }), input,
      el('button', { type: 'submit', class: 'primary', text: 'Rename' }),
      el('button', { type: 'button', onclick: renderMemory, text: 'Cancel' }));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const r = await api('POST', sPath() + '/memories/' + encodeURIComponent(m.id),
        { path: input.value, precondition: { type: 'content_sha256', content_sha256: m.content_sha256 } });
      if (!r.ok) { status(errorText(r), true); return; }
      status('Renamed to ' + r.json.path + '.');
      await loadTree();
      openMemory(m.id);
    });
    view().prepend(form);
    input.focus();
  }

  function confirmBox(question, yesLabel, onYes) {
    const box = el('div', { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm' },
      el('p', { text: question }));
    const yes = el('button', { type: 'button', class: 'danger', text: yesLabel, onclick: () => { box.remove(); onYes(); } });
    const no = el('button', { type: 'button', text: 'Cancel', onclick: () => box.remove() });
    box.append(el('div', { class: 'actions' }, yes, no));
    view().prepend(box);
    no.focus();
  }

  function deleteMemory() {
    const m = state.current;
    const before = m.memory_version_id;
    confirmBox('Delete ' + m.path + '? Its history stays: you can undo this.', 'Delete', async () => {
      const r = await api('DELETE', sPath() + '/memories/' + encodeURIComponent(m.id) +
        '?expected_content_sha256=' + m.content_sha256);
      if (!r.ok) { status(errorText(r), true); return; }
      state.current = null;
      await loadTree();
      view().replaceChildren(el('p', { class: 'hint', text: 'Choose a memory on the left.' }));
      status('Deleted ' + m.path + '.', false, {
        label: 'Undo',
        run: async () => {
          const u = await api('POST', mPath() + '/memory_versions/' + encodeURIComponent(before) + '/restore');
          if (!u.ok) { status(errorText(u), true); return; }
          status('Restored ' + m.path + '.');
          await loadTree();
          openMemory(m.id);
        },
      });
    });
  }

  // --- history, diff, restore, redact ---------------------------------

  // The history comes 100 versions a page, newest first; "Older versions"
  // fetches the next page (the API's next_page cursor) until there is none.
  async function showHistory(memoryId) {
    const q = '?limit=100' + (memoryId ? '&memory_id=' + encodeURIComponent(memoryId) : '');
    const r = await api('GET', sPath() + '/memory_versions' + q);
    if (!r.ok) { status(errorText(r), true); return; }
    const title = memoryId && state.current ? 'History of ' + state.current.path : 'History of the store';
    // A memory's current version cannot be redacted (change or delete it first):
    // the first version of each memory seen, newest first, across pages.
    const seen = new Set();
    const row = (v) => {
      const current = !seen.has(v.memory_id) && v.operation !== 'deleted';
      seen.add(v.memory_id);
      const actions = el('td', {},
        el('button', { type: 'button', onclick: () => showDiff(v, memoryId), text: 'Diff' }), ' ',
        v.operation !== 'deleted' && !v.redacted_at ? el('button', { type: 'button', onclick: () => restore(v, memoryId), text: 'Restore' }) : null, ' ',
        !v.redacted_at && !current ? el('button', { type: 'button', class: 'danger', onclick: () => redact(v, memoryId), text: 'Redact' }) : null,
        current ? el('span', { class: 'meta', text: '(current)' }) : null);
      return el('tr', { 'data-version': v.id },
        el('td', { text: v.id }),
        el('td', { text: v.operation + (v.redacted_at ? ' (redacted)' : '') }),
        memoryId ? null : el('td', { text: v.path === null ? '(redacted)' : v.path }),
        el('td', { text: actorName(v.created_by) }),
        el('td', { text: fmtTime(v.created_at) }),
        el('td', { text: fmtSize(v.content_size_bytes) }),
        actions);
    };
    const head = el('tr', {}, ...['Version', 'Operation'].concat(memoryId ? [] : ['Path'], ['Actor', 'Time', 'Size', 'Actions']).map((h) => el('th', { scope: 'col', text: h })));
    const body = el('tbody', {}, ...r.json.data.map(row));
    let next = r.json.next_page;
    const more = el('button', { type: 'button', id: 'history-more', text: 'Older versions' });
    more.hidden = !next;
    more.onclick = async () => {
      more.disabled = true;
      const p = await api('GET', sPath() + '/memory_versions' + q + '&page=' + encodeURIComponent(next));
      more.disabled = false;
      if (!p.ok) { status(errorText(p), true); return; }
      body.append(...p.json.data.map(row));
      next = p.json.next_page;
      more.hidden = !next;
      status('Showing ' + body.children.length + ' versions' + (next ? '; older ones remain.' : ', all there are.'));
    };
    view().replaceChildren(el('h2', { text: title }),
      memoryId ? el('div', { class: 'actions' }, el('button', { type: 'button', onclick: () => openMemory(memoryId), text: 'Back to the memory' })) : null,
      el('table', { id: 'history' }, el('caption', { class: 'meta', text: title + ', newest first' }), el('thead', {}, head), body),
      el('div', { class: 'actions' }, more),
      el('div', { id: 'diff-area' }));
  }

  async function showDiff(v, memoryId) {
    const r = await api('GET', mPath() + '/memory_versions/' + encodeURIComponent(v.id) + '/diff');
    const area = $('diff-area') || view();
    if (!r.ok) { status(errorText(r), true); return; }
    const box = el('div', { class: 'code diff', role: 'region', 'aria-label': 'Diff of ' + v.id, tabindex: '0' });
    const text = r.json.diff;
    const lines = text ? text.replace(/\n$/, '').split('\n') : [];
    if (!lines.length) box.append(el('div', { class: 'ln' }, el('span', { class: 'tx', text: r.json.redacted ? '(a redacted version: nothing to compare)' : '(no change in content)' })));
    for (const line of lines) {
      const cls = line.startsWith('@@') ? 'hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : '';
      box.append(el('div', { class: 'ln ' + cls }, el('span', { class: 'tx', text: line })));
    }
    // Redacted versions have no content: the diff is against the readable one before them.
    const passed = r.json.redacted_skipped || [];
    area.replaceChildren(el('h3', { text: v.id + ' against ' + (r.json.previous_version_id || 'nothing (the first version)') }),
      passed.length ? el('p', { class: 'meta', text: 'Passed over, redacted: ' + passed.join(', ') + '.' }) : null, box);
    void memoryId;
  }

  async function restore(v, memoryId) {
    const r = await api('POST', mPath() + '/memory_versions/' + encodeURIComponent(v.id) + '/restore');
    if (!r.ok) { status(errorText(r), true); return; }
    status(r.json.memory_version_id ? 'Restored ' + v.id + ' as ' + r.json.memory_version_id + '.' : 'The memory already holds that content.');
    await loadTree();
    if (memoryId) await openMemory(memoryId);
    else showHistory(null);
  }

  function redact(v, memoryId) {
    confirmBox('Redact ' + v.id + (v.path ? ' of ' + v.path : '') + '? Its content and its path are erased for good, from the store\'s files and its search index. This cannot be undone. The memory itself (its current content) is not changed.',
      'Redact for good', async () => {
        const r = await api('POST', sPath() + '/memory_versions/' + encodeURIComponent(v.id) + '/redact');
        if (!r.ok) { status(errorText(r), true); return; }
        status('Redacted ' + v.id + '.');
        showHistory(memoryId);
      });
  }

  // --- search, usage --------------------------------------------------

  function showSearch() {
    const input = el('input', { id: 'search-q', type: 'search' });
    const results = el('div', { id: 'search-results' });
    const form = el('form', { class: 'inline', role: 'search' },
      el('label', { for: 'search-q', text: 'Search for' }), input,
      el('button', { type: 'submit', class: 'primary', text: 'Search' }));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const r = await api('GET', mPath() + '/search?q=' + encodeURIComponent(input.value));
      if (!r.ok) { status(errorText(r), true); return; }
      status(r.json.data.length + ' found.');
      results.replaceChildren(el('ul', { class: 'hits' }, ...r.json.data.map((h) => {
        const mem = state.memories.find((m) => m.path === h.path);
        return el('li', {},
          mem ? el('button', { type: 'button', onclick: () => openMemory(mem.id), text: h.path }) : el('span', { text: h.path }),
          el('span', { class: 'meta', text: ' line ' + h.line }),
          el('div', { class: 'snippet' }, h.before, el('mark', { text: h.match }), h.after));
      })));
    });
    view().replaceChildren(el('h2', { text: 'Search' }), form, results);
    input.focus();
  }

  async function showUsage() {
    const r = await api('GET', mPath() + '/stats');
    if (!r.ok) { status(errorText(r), true); return; }
    const s = r.json;
    const row = (label, used, max, fmt) => el('tr', {},
      el('th', { scope: 'row', text: label }),
      el('td', { text: fmt(used) + ' of ' + fmt(max) }),
      el('td', {}, el('meter', { min: '0', max: String(max || 1), value: String(used), 'aria-label': label + ' used' })));
    const plain = (n) => String(n);
    view().replaceChildren(el('h2', { text: 'Usage and limits' }),
      el('table', { id: 'usage' }, el('tbody', {},
        row('Bytes', s.used.bytes, s.limits.max_store_bytes, fmtSize),
        row('Memories', s.used.memories, s.limits.max_memories, plain),
        row('Directories', s.used.directories, s.limits.max_directories, plain))),
      el('p', { class: 'meta', text: 'A memory may hold up to ' + fmtSize(s.limits.max_memory_bytes) + '. Versions kept: ' + s.versions + '.' }),
      ...expiring(s));
  }

  // A span of milliseconds as the CLI words idle times: "3d 4h", "5h 2m", "7m".
  function fmtSpan(ms) {
    const m = Math.floor(ms / 60000), d = Math.floor(m / 1440), h = Math.floor((m % 1440) / 60);
    return d ? d + 'd ' + h + 'h' : h ? h + 'h ' + (m % 60) + 'm' : (m % 60) + 'm';
  }

  // The memories closest to expiring: with the agents' --expire-after (given
  // to memtool web too), when each goes; without it, only which go first.
  function expiring(s) {
    if (!s.expire_after_ms) {
      return [el('h3', { text: 'Idle longest (the first that expiry would delete)' }),
        el('p', { class: 'meta', text: 'Start memtool web with the agent\'s --expire-after to see when each expires.' }),
        el('ul', { id: 'expiring' }, ...s.idlest.map((f) => el('li', {}, f.path + ' \u00b7 last read or changed ' + fmtTime(f.last_access_at))))];
    }
    const now = Date.now();
    return [el('h3', { text: 'Close to expiring (idle ' + fmtSpan(s.expire_after_ms) + ' deletes a memory)' }),
      el('ul', { id: 'expiring' }, ...s.idlest.map((f) => {
        const left = new Date(f.expires_at).getTime() - now;
        return el('li', {}, f.path + ' \u00b7 ' + (left > 0 ? 'expires in ' + fmtSpan(left) + ', ' + fmtTime(f.expires_at)
          : 'expired: the next expiry run deletes it'));
      }))];
  }

  // What the secrets guard refused the agent, from the audit log: by kind
  // and line, never the secret (the log never holds it).
  async function showGuard() {
    const r = await api('GET', mPath() + '/guard');
    if (!r.ok) {
      view().replaceChildren(el('h2', { text: 'Refused secrets' }), el('p', { text: errorText(r) }));
      return;
    }
    const parts = [el('h2', { text: 'Refused secrets' })];
    if (!r.json.audit_log) {
      parts.push(el('p', { text: 'No audit log: start memtool web with --audit FILE (or MEMTOOL_AUDIT), the file the agent\'s memtool appends to, to see what the secrets guard refused.' }));
    } else if (!r.json.data.length) {
      parts.push(el('p', { text: 'The secrets guard refused nothing in the audit log.' }));
    } else {
      parts.push(el('table', { id: 'guard' },
        el('caption', { class: 'meta', text: 'Writes the secrets guard refused, newest first' }),
        el('thead', {}, el('tr', {}, ...['Time', 'Actor', 'Command', 'Path', 'What it found'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...r.json.data.map((g) => el('tr', {},
          el('td', { text: fmtTime(g.time) }), el('td', { text: g.actor || '' }), el('td', { text: g.command || '' }),
          el('td', { text: g.path || '' }), el('td', { text: g.guard }))))));
    }
    view().replaceChildren(...parts);
  }

  // --- start ----------------------------------------------------------

  async function start() {
    $('filter').addEventListener('input', renderTree);
    // A view of its own starts with no message left from the one before.
    for (const id of ['nav-search', 'nav-store-history', 'nav-usage', 'nav-guard', 'new-memory']) {
      $(id).addEventListener('click', () => status(''));
    }
    $('new-memory').addEventListener('click', newMemory);
    $('nav-search').addEventListener('click', showSearch);
    $('nav-store-history').addEventListener('click', () => showHistory(null));
    $('nav-usage').addEventListener('click', showUsage);
    $('nav-guard').addEventListener('click', showGuard);
    $('store').addEventListener('change', async (e) => {
      state.store = e.target.value;
      state.current = null;
      await loadTree();
      view().replaceChildren(el('p', { class: 'hint', text: 'Choose a memory on the left.' }));
    });
    if (!(await login())) return;
    await loadStores();
    await loadTree();
    document.body.setAttribute('data-ready', '1');
  }

  document.addEventListener('DOMContentLoaded', start);
})();
