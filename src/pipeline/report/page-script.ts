/**
 * The script of report.html, as text: it reads the page's data (the items as page-row.ts makes them)
 * and draws one page of cards at a time, filtered by status or failure group, searched by name and
 * sorted by status, name or time; the view is kept in the URL's fragment (`#status=failed&q=cat`), so a
 * view can be linked and survives the page's reload while a batch runs.
 *
 * The text is one function expression `(function (doc) {…})`: in the page it is called with `document`;
 * called with null (pageScriptApi) it only returns its pure parts — `card`, `select`, `parseView`,
 * `viewHash` — which the writer uses to draw the cards shown without JavaScript and the tests call: the
 * page and the tests run the very same text. Plain ES2017, no template literals (it lives in one).
 */
import { createHash } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import type { PageRow } from './page-row.ts';

/** Cards on one page of the list. */
export const PAGE_SIZE = 100;

/** The page script's text (see the module comment). */
export const PAGE_SCRIPT = String.raw`(function (doc) {
'use strict';
var PAGE_SIZE = ${PAGE_SIZE};
var LABEL = { succeeded: 'succeeded', failed: 'failed', skipped: 'skipped', unprocessed: 'not processed', pending: 'in progress' };
var RANK = { failed: 0, unprocessed: 1, pending: 2, succeeded: 3, skipped: 4 };
var SORTS = { status: 1, name: 1, time: 1 };
var ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return ESC[c]; }); }
function url(p) { return esc(p.split('/').map(encodeURIComponent).join('/')); }
function base(p) { return p.slice(p.lastIndexOf('/') + 1); }
function shownName(r) { return r.p === undefined ? r.i : r.i + ' (out folder ' + r.p + '/)'; }
function pad2(n) { return (n < 10 ? '0' : '') + n; }
function duration(ms) {
  if (!isFinite(ms) || ms < 0) return '\u2014';
  if (ms < 1000) return Math.round(ms) + 'ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
  var s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + 'm' + pad2(s % 60) + 's';
  var m = Math.round(s / 60);
  return Math.floor(m / 60) + 'h' + pad2(m % 60) + 'm';
}
function figure(thumb, alt, caption, o) {
  var img = thumb ? '<img src="' + url(thumb) + '" alt="' + esc(alt) + '" loading="lazy" decoding="async">'
    : o.failed ? '<div class="ph" title="' + esc(o.ph) + '"><span>' + esc(o.ph) + '</span></div>'
    : '<div class="ph">' + esc(o.ph || 'no preview') + '</div>';
  var linked = o.href ? '<a href="' + url(o.href) + '">' + img + '</a>' : img;
  var play = o.video ? '<span class="play">\u25b6 video</span>' : '';
  var cls = o.small ? ' class="small"' : o.failed ? ' class="failed"' : '';
  return '<figure' + cls + '>' + linked + play + '<figcaption>' + esc(caption) + '</figcaption></figure>';
}
function inputFigure(r) {
  if (r.pi) return '<figure><div class="prompt-in">' + esc(r.pr || '') + '</div><figcaption>input \u00b7 prompt file</figcaption></figure>';
  return figure(r.it, 'input ' + r.i, r.ic || 'input', { video: r.iv, ph: r.ph });
}
function outputFigures(r) {
  var figs = [];
  if (r.c) figs.push(figure(r.c[1], 'composite of ' + r.i, 'composite', { href: r.c[0] }));
  var o = r.o || [];
  for (var k = 0; k < o.length; k++) {
    figs.push(figure(o[k][1], 'output ' + base(o[k][0]) + ' of ' + r.i, base(o[k][0]),
      { href: o[k][0], video: o[k][2] & 1, small: o[k][2] & 2, ph: 'no preview' }));
  }
  return figs.join('');
}
function chainFigures(r) {
  var figs = [];
  for (var k = 0; k < r.ch.length; k++) {
    var s = r.ch[k];
    if (k > 0) figs.push('<div class="arrow">\u2192' + (s[6] ? '<small>from ' + esc(s[6]) + '</small>' : '') + '</div>');
    figs.push(figure(s[3], 'step ' + s[0] + ' of ' + r.i, s[0] + ' \u00b7 ' + (s[1] === 'downloaded' ? 'done' : s[1]),
      { href: s[2] || undefined, video: s[4] & 1, ph: s[5] || 'no preview', failed: s[1] === 'failed' }));
  }
  return figs.join('');
}
function attemptText(a) {
  var what = a[0] ? 'generation <span class="mono">' + esc(a[0]) + '</span>' : 'request <span class="mono">' + esc(a[1] || '?') + '</span>';
  return what + ' failed' + (a[2] ? ' <span class="mono">' + esc(a[2]) + '</span>' : '') + (a[3] ? ': ' + esc(a[3]) : '');
}
function fact(name, value, cls) { return '<dt>' + esc(name) + '</dt><dd' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(value) + '</dd>'; }
function card(r, n) {
  var facts = '';
  if (r.sn) facts += fact('step', r.sn);
  if (r.q) facts += fact('request', r.q);
  if (r.pr && !r.pi) facts += fact('prompt', r.pr);
  if (r.st) facts += fact('failed at', r.st);
  if (r.fc) facts += fact('failure code', r.fc, 'mono');
  if (r.gen) facts += fact('generation', r.gen, 'mono');
  if (r.rq) facts += fact('request id', r.rq, 'mono');
  if (r.j) facts += fact('journal', r.j);
  if (r.d !== undefined) facts += fact('time', duration(r.d));
  // A chain's steps' notes (a step not downloaded: why, and how to keep its outputs).
  for (var k = 0; r.ch && k < r.ch.length; k++) if (r.ch[k][7]) facts += fact(r.ch[k][0], r.ch[k][7]);
  var outs = r.ch ? chainFigures(r) : outputFigures(r);
  var place = r.p === undefined ? r.i : r.p;
  var a = r.a || [];
  return '<article class="card ' + r.s + (r.ch ? ' chain' : '') + '" id="item-' + n + '">' +
    '<header><span class="badge ' + r.s + '">' + LABEL[r.s] + '</span><span class="name">' + esc(shownName(r)) + '</span></header>' +
    '<div class="media">' + inputFigure(r) + (outs ? '<div class="arrow">\u2192</div>' + outs : '') + '</div>' +
    (r.r ? '<p class="reason">' + esc(r.r) + '</p>' : '') +
    (a.length ? '<p class="attempts">' + (a.length === 1 ? 'Earlier attempt' : a.length + ' earlier attempts') + ': ' + a.map(attemptText).join('; ') + '</p>' : '') +
    (facts ? '<dl class="facts">' + facts + '</dl>' : '') +
    (r.res ? '<div class="links"><a href="' + url(place + '/result.json') + '">result.json</a></div>' : '') +
    '</article>';
}
function parseView(hash) {
  var v = { status: 'all', group: null, q: '', sort: 'status', page: 0 };
  var parts = String(hash || '').replace(/^#/, '').split('&');
  for (var k = 0; k < parts.length; k++) {
    var eq = parts[k].indexOf('=');
    if (eq < 0) continue;
    var key = parts[k].slice(0, eq), val;
    try { val = decodeURIComponent(parts[k].slice(eq + 1).replace(/\+/g, ' ')); } catch (e) { continue; }
    if (key === 'status' && (val === 'all' || RANK[val] !== undefined)) v.status = val;
    else if (key === 'group' && /^\d+$/.test(val)) v.group = Number(val);
    else if (key === 'q') v.q = val;
    else if (key === 'sort' && SORTS[val]) v.sort = val;
    else if (key === 'page' && /^\d+$/.test(val)) v.page = Math.max(0, Number(val) - 1);
  }
  return v;
}
function viewHash(v) {
  var p = [];
  if (v.status !== 'all') p.push('status=' + v.status);
  if (v.group !== null) p.push('group=' + v.group);
  if (v.q) p.push('q=' + encodeURIComponent(v.q));
  if (v.sort !== 'status') p.push('sort=' + v.sort);
  if (v.page > 0) p.push('page=' + (v.page + 1));
  return '#' + p.join('&');
}
function select(rows, v, lower) {
  var q = v.q.toLowerCase(), out = [];
  for (var k = 0; k < rows.length; k++) {
    var r = rows[k];
    if (v.status !== 'all' && r.s !== v.status) continue;
    if (v.group !== null && r.g !== v.group) continue;
    if (q && (lower ? lower(k) : (r.i + '\n' + (r.p || '')).toLowerCase()).indexOf(q) < 0) continue;
    out.push(k);
  }
  if (v.sort === 'status') out.sort(function (a, b) { return RANK[rows[a].s] - RANK[rows[b].s] || a - b; });
  else if (v.sort === 'time') {
    out.sort(function (a, b) {
      var da = rows[a].d, db = rows[b].d;
      if (da === undefined || db === undefined) return (da === undefined) - (db === undefined) || a - b;
      return db - da || a - b;
    });
  }
  return out;
}
var api = { card: card, select: select, parseView: parseView, viewHash: viewHash, PAGE_SIZE: PAGE_SIZE };
if (!doc) return api;

var data = JSON.parse(doc.getElementById('report-data').textContent);
var rows = data.rows, groups = data.groups;
var lowered = null;
function lower(k) {
  if (!lowered) lowered = new Array(rows.length);
  var s = lowered[k];
  if (s === undefined) s = lowered[k] = (rows[k].i + '\n' + (rows[k].p || '')).toLowerCase();
  return s;
}
var list = doc.getElementById('cards');
var controls = doc.getElementById('controls');
var search = doc.getElementById('search');
var sortBox = doc.getElementById('sort');
var shownText = doc.getElementById('shown');
var filterText = doc.getElementById('filter');
var pagers = doc.querySelectorAll('.pager');
var statusLinks = controls.querySelectorAll('a[data-status]');
var groupRows = doc.querySelectorAll('#failures tr[data-group]');
var note = doc.getElementById('static-note');
if (note) note.hidden = true;
controls.hidden = false;
var view = parseView(location.hash);
function setView(v, replace) {
  var h = viewHash(v);
  if (h === '#') h = location.pathname + location.search;
  if (replace) history.replaceState(null, '', h); else history.pushState(null, '', h);
  draw();
}
function pagerHtml(page, pages) {
  if (pages <= 1) return '';
  var out = [], v = parseView(location.hash);
  function link(p, text) { v.page = p; return '<a href="' + viewHash(v) + '">' + text + '</a>'; }
  out.push(page > 0 ? link(page - 1, '\u2190 previous') : '<span class="off">\u2190 previous</span>');
  out.push('<span>page ' + (page + 1) + ' of ' + pages + '</span>');
  out.push(page < pages - 1 ? link(page + 1, 'next \u2192') : '<span class="off">next \u2192</span>');
  return out.join(' ');
}
function draw() {
  view = parseView(location.hash);
  var idx = select(rows, view, lower);
  var pages = Math.max(1, Math.ceil(idx.length / PAGE_SIZE));
  var page = Math.min(view.page, pages - 1);
  var from = page * PAGE_SIZE, to = Math.min(idx.length, from + PAGE_SIZE);
  var html = [];
  for (var k = from; k < to; k++) html.push(card(rows[idx[k]], idx[k]));
  list.innerHTML = html.length ? html.join('') : '<p class="muted">No file matches.</p>';
  shownText.textContent = idx.length === 0 ? 'no files' : (from + 1) + '\u2013' + to + ' of ' + idx.length + ' files';
  var f = [];
  if (view.group !== null && groups[view.group]) {
    var g = groups[view.group];
    f.push('reason: ' + esc(g.reason === null ? 'other reasons' : g.shape || g.reason));
  }
  filterText.innerHTML = f.length ? f.join(' \u00b7 ') + ' <a href="' + viewHash({ status: view.status, group: null, q: view.q, sort: view.sort, page: 0 }) + '">clear</a>' : '';
  for (var p = 0; p < pagers.length; p++) pagers[p].innerHTML = pagerHtml(page, pages);
  for (var s = 0; s < statusLinks.length; s++) {
    var a = statusLinks[s];
    a.className = a.getAttribute('data-status') === view.status ? 'on' : '';
    a.href = viewHash({ status: a.getAttribute('data-status'), group: null, q: view.q, sort: view.sort, page: 0 });
  }
  for (var gr = 0; gr < groupRows.length; gr++) {
    groupRows[gr].className = Number(groupRows[gr].getAttribute('data-group')) === view.group ? 'failed on' : 'failed';
  }
  if (doc.activeElement !== search) search.value = view.q;
  sortBox.value = view.sort;
}
var typing = 0;
search.addEventListener('input', function () {
  clearTimeout(typing);
  typing = setTimeout(function () {
    var v = parseView(location.hash);
    v.q = search.value; v.page = 0;
    setView(v, true);
  }, 150);
});
sortBox.addEventListener('change', function () {
  var v = parseView(location.hash);
  v.sort = sortBox.value; v.page = 0;
  setView(v, false);
});
var section = doc.getElementById('items');
window.addEventListener('hashchange', function () {
  draw();
  // A new page, status or reason: show the list from its top (a search types on where it is).
  var top = section.getBoundingClientRect().top;
  if (top < 0 || top > innerHeight / 2) section.scrollIntoView();
});
draw();
// While the batch runs: reload every few seconds, keeping the view (location.reload keeps the fragment).
var refresh = doc.querySelector('meta[name="genpipe-refresh"]');
var seconds = refresh ? Number(refresh.getAttribute('content')) : 0;
if (seconds > 0) setTimeout(function () { location.reload(); }, seconds * 1000);
return api;
})`;

/** The script's hash for the page's Content-Security-Policy (only this script may run). */
export const PAGE_SCRIPT_CSP = `'sha256-${createHash('sha256').update(`${PAGE_SCRIPT}(document);`).digest('base64')}'`;

/** The script's pure parts (see the module comment). */
export interface PageScriptApi {
  /** The card of the item at `n` (its place in report order). */
  card(row: PageRow, n: number): string;
  /** The rows of a view, in its order (indices into `rows`). */
  select(rows: readonly PageRow[], view: PageView): number[];
  parseView(hash: string): PageView;
  viewHash(view: PageView): string;
  PAGE_SIZE: number;
}

/** A view of the list: what the URL's fragment says. */
export interface PageView {
  status: 'all' | PageRow['s'];
  group: number | null;
  q: string;
  sort: 'status' | 'name' | 'time';
  /** from 0 */
  page: number;
}

let api: PageScriptApi | null = null;

/** The script's pure parts, from its very text (evaluated once, without a document). */
export function pageScriptApi(): PageScriptApi {
  api ??= runInNewContext(`(${PAGE_SCRIPT})(null)`) as PageScriptApi;
  return api;
}
