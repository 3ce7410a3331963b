/**
 * The dashboard page's script (inline, under the page's nonce; no framework, no build). It loads the
 * snapshot, then follows the Server-Sent Events; renders only the rows in view (a virtualised list);
 * filters by status, by a failure's reason and by a search; shows a file's detail; and takes the
 * actions with the token the user gives once (kept in sessionStorage for the session; given in the
 * address, only as its #token= fragment, which no server sees). Every text of a
 * file (its name, reason, ids) reaches the DOM through textContent, never as HTML.
 */
import { INVISIBLE, printable } from '../progress/format.ts';
import { countRows } from './dashboard-model.ts';

export const DASHBOARD_SCRIPT = `
'use strict';
// The CLI's own escaping of a name (progress/format.ts), so that a name reads here as it prints there.
const INVISIBLE = ${INVISIBLE.toString()};
const printable = ${printable.toString()};
// The model's own counting (dashboard-model.ts), for the counts of one out dir picked.
const countRows = ${countRows.toString()};
const cfg = JSON.parse(document.getElementById('cfg').textContent);
const $ = (id) => document.getElementById(id);
const KEY = 'genpipe-dashboard-token';
const ROW_H = 44;
const STATUSES = ['pending', 'succeeded', 'reused', 'failed', 'skipped', 'unprocessed'];
// A token given in the address's fragment (never sent to a server, so never in an access log).
const fromUrl = /^#token=([^&]+)/.exec(location.hash);
if (fromUrl) {
  sessionStorage.setItem(KEY, decodeURIComponent(fromUrl[1]));
  history.replaceState(null, '', location.pathname + location.search);
}
let token = sessionStorage.getItem(KEY) || '';
const rows = [];
const byId = new Map();
let allCounts = {};
let batch = null;
let actions = [];
let unavailable = {};
let filter = 'all';
let reasonFilter = null;
let outDirFilter = '';
let query = '';
let view = [];
let dirty = true;
let selected = null;
const pool = new Map();

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function headers() { return token ? { authorization: 'Bearer ' + token } : {}; }
function secs(ms) { return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s'; }
function when(at) { return new Date(at).toISOString().replace('T', ' ').replace(/\\.\\d+Z$/, ' UTC'); }

function take(r) {
  const had = byId.get(r.id);
  // A change older than what the page has (streamed before its snapshot was read) is no news.
  if (had && r.seq < had.seq) return;
  if (had) Object.assign(had, r); else { byId.set(r.id, r); rows.push(r); }
  if (selected === r.id) showDetail(r.id);
}
function matches(r) {
  if (filter === 'held_back' || filter === 'waiting') return false;
  if (outDirFilter && r.outDir !== outDirFilter) return false;
  if (filter !== 'all' && r.status !== filter) return false;
  if (reasonFilter !== null && (r.status !== 'failed' || r.reason !== reasonFilter)) return false;
  if (query && !(r.input.toLowerCase().includes(query) || (r.reason || '').toLowerCase().includes(query)
      || (r.generationId || '').toLowerCase().includes(query))) return false;
  return true;
}
// A file in progress: the time since it started, now (kept current by tick); a finished one: its time.
function took(r) {
  return r.status === 'pending' ? secs(Math.max(0, Date.now() - r.firstAt)) + ' so far' : secs(r.lastAt - r.firstAt);
}
function tick() {
  for (const [id, e] of pool) {
    const r = byId.get(id);
    const t = r && r.status === 'pending' ? e.querySelector('.took') : null;
    if (t) t.textContent = took(r);
  }
}
setInterval(tick, 1000);
function stageText(r) {
  if (r.status !== 'pending') return r.state;
  return (r.stage ? r.stage + ' \\u2192 ' : '') + r.state + (r.step ? ' (' + r.step + ')' : '');
}
function fill(e, r) {
  e.className = 'row st-' + r.status + (selected === r.id ? ' sel' : '');
  e.dataset.id = r.id;
  e.dataset.input = r.input;
  e.dataset.status = r.status;
  e.replaceChildren();
  if (r.thumb) {
    const img = el('img');
    img.loading = 'lazy';
    img.alt = '';
    img.src = 'thumbs/' + r.id + '?v=' + (r.status === 'pending' ? 0 : 1);
    img.addEventListener('error', () => img.replaceWith(el('span', 'ph')));
    e.append(img);
  } else e.append(el('span', 'ph'));
  e.append(el('span', 'name', printable(r.input)), el('span', 'status', r.status), el('span', 'stage', stageText(r)),
    el('span', 'mono gen', r.generationId || ''), el('span', 'took', took(r)),
    el('span', 'reason', r.reason || ''));
}
function render() {
  if (dirty) { view = rows.filter(matches); dirty = false; drawGlance(); drawGroups(); }
  const list = $('list');
  $('spacer').style.height = view.length * ROW_H + 'px';
  const first = Math.max(0, Math.floor(list.scrollTop / ROW_H) - 5);
  const last = Math.min(view.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW_H) + 5);
  const keep = new Set();
  for (let i = first; i < last; i++) {
    const r = view[i];
    keep.add(r.id);
    let e = pool.get(r.id);
    if (!e) { e = el('div'); pool.set(r.id, e); $('spacer').append(e); e.dataset.v = ''; }
    const v = r.status + '|' + r.state + '|' + r.stage + '|' + r.lastAt + '|' + (selected === r.id);
    if (e.dataset.v !== v) { fill(e, r); e.dataset.v = v; }
    e.style.transform = 'translateY(' + i * ROW_H + 'px)';
  }
  for (const [id, e] of pool) if (!keep.has(id)) { e.remove(); pool.delete(id); }
  const files = (n) => n + (n === 1 ? ' file' : ' files');
  $('note').textContent = view.length === rows.length ? files(rows.length) : view.length + ' of ' + files(rows.length);
}
let queued = false;
function schedule(changed) {
  if (changed) dirty = true;
  if (queued) return;
  queued = true;
  requestAnimationFrame(() => { queued = false; render(); });
}
function chip(key, label, n) {
  const b = el('button', 'chip', label + ' ' + (n || 0));
  b.dataset.filter = key;
  b.setAttribute('aria-pressed', String(filter === key));
  b.addEventListener('click', () => { filter = key; reasonFilter = null; schedule(true); });
  return b;
}
function drawGlance() {
  // One out dir picked (a store's page): its own counts, by the model's countRows.
  const counts = outDirFilter
    ? Object.assign(countRows(rows.filter((r) => r.outDir === outDirFilter)), { held_back: allCounts.held_back })
    : allCounts;
  const g = $('chips');
  g.replaceChildren(chip('all', 'all', counts.total));
  for (const s of STATUSES) g.append(chip(s, s.replace('pending', 'in progress'), counts[s]));
  g.append(chip('held_back', 'held back', counts.held_back));
  if (batch && batch.waiting) g.append(chip('waiting', 'waiting', counts.waiting));
  const stages = Object.keys(counts).filter((k) => k.startsWith('in_') && counts[k] > 0)
    .map((k) => k.slice(3) + ' ' + counts[k]).join(', ');
  const done = (counts.succeeded || 0) + (counts.reused || 0) + (counts.failed || 0) + (counts.skipped || 0);
  // A run still finding its files: every total is a lower bound, and said so.
  const finding = !!(batch && batch.finding && !batch.finishedAt);
  let rate = '';
  if (batch && batch.perMinute !== null && batch.perMinute !== undefined) {
    // Measured over the time files were in progress (the server's busyRate): idle time is left out.
    const per = batch.perMinute;
    const left = counts.pending || 0;
    rate = '; ' + per.toFixed(1) + ' files/min' + (left > 0 && per > 0 ? ', ' + (finding ? 'at least ' : 'about ') + secs(Math.round(left / per * 60000)) + ' left' : '');
  }
  const of = finding ? ' of at least ' + (counts.total || 0) + ' found so far (still finding files)' : ' of ' + (counts.total || 0);
  $('progress').textContent = done + of + ' done' + (stages ? '; in progress: ' + stages : '') + rate;
  const b = batch || {};
  $('batch').textContent = b.readOnly ? 'read from the ' + (b.workers ? 'store' : 'journal') + ', nothing running here' :
    b.finishedAt ? 'finished ' + when(b.finishedAt) : b.stopping ? b.stopping : b.intakePaused ? 'intake paused, ' + (b.intakeWaiting || 0) + ((b.intakeWaiting === 1) ? ' file' : ' files') + ' waiting' : b.startedAt ? 'running since ' + when(b.startedAt) : 'starting';
  drawCredits(b.credits, finding);
  drawQuota(b.quota);
  drawWorkers(b.workers);
  drawOutDirs(b.outDirs);
  if (filter === 'held_back') drawHeld();
  if (filter === 'waiting') drawWaiting();
}
function drawWorkers(ws) {
  const box = $('workers');
  if (!ws) { box.replaceChildren(); return; }
  box.replaceChildren(document.createTextNode('workers: ' + batch.workersSaid));
  for (const w of ws) {
    const s = el('span', 'worker' + (w.alive ? '' : ' gone'),
      '; ' + w.role + ' ' + w.host + ' pid ' + w.pid + (w.alive ? '' : ' (gone)') + ', ' + w.inHand + ' in hand'
      + (w.files.length ? ' (' + w.files.map(printable).join(', ') + ')' : '') + ', seen ' + secs(w.seenAgoMs) + ' ago');
    s.dataset.pid = w.pid;
    s.dataset.alive = String(w.alive);
    box.append(s);
  }
}
function drawOutDirs(dirs) {
  const pick = $('outdir');
  if (!dirs || dirs.length < 2) { pick.hidden = true; return; }
  pick.hidden = false;
  const have = [...pick.options].map((o) => o.value).join('\\n');
  if (have === ['', ...dirs].join('\\n')) return;
  const all = el('option', null, 'every out dir (' + dirs.length + ')');
  all.value = '';
  pick.replaceChildren(all, ...dirs.map((d) => { const o = el('option', null, d); o.value = d; return o; }));
  pick.value = outDirFilter;
}
function drawCredits(c, finding) {
  if (!c) { $('credits').textContent = ''; return; }
  $('credits').textContent = 'credits: ' + c.spent + ' spent, ' + (finding ? 'at least about ' + c.estimated + ' in all (the files found so far)' : 'about ' + c.estimated + ' in all')
    + (c.unpriced.length ? ' (' + c.unpriced.join(', ') + ' not priced)' : '') + ' at ' + c.source;
}
function drawQuota(q) {
  if (!q) { $('quota').textContent = ''; return; }
  const win = q.windowMs === null ? 'window not learned yet' : 'the ' + secs(q.windowMs) + ' window';
  const limit = q.limit === null ? '' : ' of ' + q.limit;
  const ceiling = q.ceiling === null ? 'ceiling not learned' : 'ceiling ' + q.ceiling;
  $('quota').textContent = 'quota: ' + q.used + limit + ' requests in ' + win + '; ' + q.jobs + ' jobs (' + ceiling + ')'
    + (q.waiting ? ', ' + q.waiting + ' waiting' : '') + '; 429s: ' + q.rateLimited + ', retry waits: ' + q.retries;
}
function drawHeld() {
  const box = $('detail');
  box.replaceChildren(el('h2', null, 'Held back as incomplete'));
  for (const h of (batch && batch.heldBack) || []) {
    const p = el('p');
    p.append(el('b', null, printable(h.input)), document.createTextNode(': '), el('span', 'reason', h.reason),
      document.createTextNode(' (since ' + when(h.since) + ')'));
    box.append(p);
  }
}
// A watch's files not started yet: those settling (being written), then those waiting for the intake.
function drawWaiting() {
  const box = $('detail');
  const w = (batch && batch.waiting) || { settling: [], queued: [] };
  box.replaceChildren(el('h2', null, 'Waiting'));
  box.append(el('h3', null, 'Settling (being written, or checked): ' + w.settling.length));
  for (const f of w.settling) {
    const p = el('p', 'waiting settling');
    p.append(el('b', null, printable(f.input)), document.createTextNode(' unchanged since ' + when(f.since)));
    box.append(p);
  }
  const n = (batch && batch.intakeWaiting) || 0;
  box.append(el('h3', null, 'Waiting for the intake' + (batch && batch.intakePaused ? ' (paused)' : '') + ': ' + n));
  for (const input of w.queued) box.append(el('p', 'waiting queued', printable(input)));
  if (n > w.queued.length) box.append(el('p', null, '\u2026 and ' + (n - w.queued.length) + ' more'));
}
function drawGroups() {
  const groups = new Map();
  for (const r of rows) if (r.status === 'failed') groups.set(r.reason || '(no reason)', (groups.get(r.reason || '(no reason)') || 0) + 1);
  const box = $('groups');
  box.replaceChildren();
  for (const [reason, n] of [...groups].sort((a, b) => b[1] - a[1])) {
    const b = el('button', 'group', n + ' \\u00d7 ' + reason);
    b.addEventListener('click', () => { reasonFilter = reasonFilter === reason ? null : reason; filter = 'all'; schedule(true); });
    box.append(b);
  }
}
async function showDetail(id) {
  selected = id;
  schedule(false);
  const res = await fetch('api/files/' + id, { headers: headers() });
  if (!res.ok) return;
  const d = await res.json();
  const r = d.row;
  const box = $('detail');
  box.replaceChildren(el('h2', null, printable(r.input)));
  if (r.thumb) { const img = el('img'); img.alt = ''; img.src = 'thumbs/' + r.id; box.append(img); }
  const t = el('table');
  const shown = (v) => (v === null || v === undefined ? v : printable(v));
  for (const [k, v] of [['status', r.status], ['state', r.state], ['stage', r.stage], ['step', r.step], ['out folder', shown(r.place)],
    ['generation', r.generationId], ['request', r.requestId], ['out dir', shown(r.outDir)], ['worked on by', shown(r.by)], ['first seen', when(r.firstAt)], ['took', took(r)], ['reason', r.reason]]) {
    if (v === null || v === undefined || v === '') continue;
    const tr = el('tr');
    tr.append(el('td', null, k), el('td', k === 'reason' ? 'reason' : null, v));
    t.append(tr);
  }
  box.append(t);
  if (r.status === 'failed' && blocked().retry) {
    const b = el('button', null, 'Retry this file');
    b.id = 'retry-one';
    b.disabled = true;
    b.title = blocked().retry;
    box.append(b, el('span', 'why', blocked().retry));
  } else if (r.status === 'failed' && actions.includes('retry')) {
    const b = el('button', null, 'Retry this file');
    b.id = 'retry-one';
    b.addEventListener('click', () => {
      b.disabled = true; // one retry per click: a second would race the first
      act('retry', { id: r.id });
    });
    box.append(b);
  }
  if (d.result) drawResult(box, r, d.result);
  box.append(el('h3', null, 'Steps'));
  if (d.history === null) {
    box.append(el('p', 'why', 'its steps are no longer kept here (only those of the files changed last are)'));
    return;
  }
  const h = el('table');
  h.id = 'history';
  for (const s of d.history) {
    const tr = el('tr');
    tr.append(el('td', 'mono', when(s.at).slice(11)), el('td', null, (s.stage ? s.stage + ' \\u2192 ' : '') + s.state + (s.step ? ' (' + s.step + ')' : '')), el('td', 'reason', s.reason || ''));
    h.append(tr);
  }
  box.append(h);
}
function drawResult(box, r, result) {
  if (result.outputs.length) {
    box.append(el('h3', null, 'Outputs'));
    const outs = el('div');
    outs.id = 'outputs';
    result.outputs.forEach((name, n) => {
      const fig = el('figure');
      const img = el('img');
      img.alt = '';
      img.src = 'outputs/' + r.id + '/' + n;
      img.addEventListener('error', () => img.remove());
      fig.append(img, el('figcaption', 'mono', printable(name)));
      outs.append(fig);
    });
    box.append(outs);
  }
  if (result.timings) {
    box.append(el('h3', null, 'Timings'));
    const t = el('table');
    for (const [stage, v] of Object.entries(result.timings)) {
      const tr = el('tr');
      tr.append(el('td', null, stage), el('td', null, v && typeof v.duration_ms === 'number' ? secs(v.duration_ms) : ''));
      t.append(tr);
    }
    box.append(t);
  }
  if (result.request) {
    box.append(el('h3', null, 'Request'));
    const pre = el('pre', 'mono', JSON.stringify(result.request, null, 2));
    pre.id = 'request';
    box.append(pre);
  }
}
let stopAsked = false;
async function act(name, body) {
  if (!token) {
    const given = prompt('The dashboard token (printed on stderr when genpipe started):');
    if (!given) return;
    token = given.trim();
    sessionStorage.setItem(KEY, token);
  }
  const res = await fetch('api/actions/' + name, { method: 'POST', headers: Object.assign({ 'content-type': 'application/json' }, headers()), body: JSON.stringify(body || {}) });
  const answer = await res.json().catch(() => ({}));
  if (res.status === 401) { token = ''; sessionStorage.removeItem(KEY); }
  $('said').textContent = answer.message || answer.error || res.statusText;
  // Stopped from here: the stream's end is the batch's, whether or not its last update arrived.
  if (name === 'stop' && res.ok) {
    stopAsked = true;
    // The stream may have broken before this answer was read, and a browser need not say so again.
    if (stream && stream.broken) sayEnded();
  }
  if (answer.notNow && batch) batch.notNow = answer.notNow;
  drawActions();
}
// What cannot be done: what this process cannot do, and what does not apply in the batch's state now.
function blocked() { return Object.assign({}, (batch && batch.notNow) || {}, unavailable); }
let drawnBlocked = '';
// What Stop does, asked first: a worker gives the files in its hands back to the queue and exits.
function ask(a) {
  if (a !== 'stop') return null;
  return batch && batch.command === 'worker'
    ? 'Stop the worker? The files in its hands go back to the queue for the other workers, and it exits.'
    : 'Stop the batch? No new work is started; work already at the service winds down.';
}
function drawActions() {
  const box = $('actions');
  box.replaceChildren();
  const names = { stop: 'Stop', pause: 'Pause intake', resume: 'Resume intake', 'retry-all': 'Retry failed' };
  const notNow = (batch && batch.notNow) || {};
  drawnBlocked = JSON.stringify(notNow);
  for (const a of actions) {
    if (!names[a]) continue;
    const b = el('button', null, names[a]);
    b.dataset.action = a;
    if (notNow[a]) { b.disabled = true; b.title = notNow[a]; }
    b.addEventListener('click', () => { if (!ask(a) || confirm(ask(a))) act(a); });
    box.append(b);
  }
  // What this process cannot do, disabled, with why.
  for (const [a, why] of Object.entries(unavailable)) {
    for (const n of a === 'pause' ? ['pause'] : ['retry-all']) {
      const b = el('button', null, names[n]);
      b.dataset.action = n;
      b.disabled = true;
      b.title = why;
      box.append(b);
    }
    const note = el('span', 'why', why);
    note.dataset.unavailable = a;
    box.append(note);
  }
  $('lock').textContent = token ? 'actions unlocked' : (actions.length ? 'read-only (actions ask for the token)' : 'read-only');
}
function apply(d) {
  for (const r of d.rows) take(r);
  allCounts = d.counts;
  batch = d.batch;
  if (JSON.stringify(batch.notNow || {}) !== drawnBlocked) drawActions();
  schedule(true);
}
// The stream resumes after the snapshot's last change: none falls between the two.
let seq = 0;
let stream = null;
// Said once, from whichever comes last: the stream's error or the stop's answer.
function sayEnded() {
  if (stream.ended) return;
  stream.ended = true;
  stream.es.close();
  // After the answer of the action that ended it (stop), not over it.
  const said = $('said').textContent;
  $('said').textContent = (said ? said + ' · ' : '') + 'the batch has ended: this page no longer updates';
}
function follow() {
  const es = new EventSource('api/events?after=' + seq);
  stream = { es, broken: false, ended: false };
  es.onmessage = (m) => { stream.broken = false; apply(JSON.parse(m.data)); };
  // A batch that stopped or finished ends its stream for good: no reconnecting to a closed server.
  es.onerror = () => {
    stream.broken = true;
    if (stopAsked || (batch && (batch.stopping || batch.finishedAt))) sayEnded();
  };
}
async function start() {
  const res = await fetch('api/snapshot', { headers: headers(), cache: 'no-store' });
  if (res.status === 401) { location.reload(); return; }
  const s = await res.json();
  for (const r of s.rows) take(r);
  allCounts = s.counts;
  batch = s.batch;
  actions = s.actions;
  unavailable = s.unavailable || {};
  seq = s.seq;
  drawActions();
  schedule(true);
  follow();
}
$('list').addEventListener('scroll', () => schedule(false));
window.addEventListener('resize', () => schedule(false));
$('spacer').addEventListener('click', (e) => {
  const row = e.target.closest('.row');
  if (row) showDetail(Number(row.dataset.id));
});
$('outdir').addEventListener('change', (e) => { outDirFilter = e.target.value; schedule(true); });
$('search').addEventListener('input', (e) => { query = e.target.value.trim().toLowerCase(); schedule(true); });
start();
`;
