/**
 * The dashboard page: one HTML string, its styles and script inline under a per-response nonce (the
 * server's Content-Security-Policy allows nothing else), no CDN and no build. The only text of ours
 * in the markup (the title) is escaped; the files' names and reasons reach the page as JSON and the
 * DOM through textContent.
 */
import { esc } from '../report/html-escape.ts';
import { DASHBOARD_SCRIPT } from './page-script.ts';
import { DASHBOARD_STYLE } from './page-style.ts';

/** What the page is made of. */
export interface DashboardPageOptions {
  nonce: string;
  /** The input dir or out dir, as shown. */
  title: string;
  /** Off loopback: every request carries the token (the session's cookie). */
  needsToken: boolean;
}

/** JSON safe inside a `<script type="application/json">` (no `</script>`, no `<!--`). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** The page's HTML (see the module comment). */
export function dashboardPage(opts: DashboardPageOptions): string {
  const n = esc(opts.nonce);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>genpipe: ${esc(opts.title)}</title>
<style nonce="${n}">${DASHBOARD_STYLE}</style>
</head>
<body>
<header>
<h1>genpipe <span id="title">${esc(opts.title)}</span></h1>
<span id="batch"></span>
<span id="progress"></span>
<span id="credits"></span>
<span id="quota"></span>
<span id="workers"></span>
<span id="tokenbox"><span id="actions"></span><span id="lock"></span><span id="said" role="status"></span></span>
</header>
<div id="glance"><span id="chips"></span><select id="outdir" aria-label="out dir" hidden></select><input id="search" type="search" placeholder="search names, reasons, generation ids" aria-label="search"></div>
<main>
<div id="left">
<div><div id="groups" aria-label="failures by reason"></div><div id="note"></div></div>
<div id="list"><div id="spacer"></div></div>
</div>
<aside id="detail"><p>Select a file to see its steps.</p></aside>
</main>
<script type="application/json" id="cfg">${scriptJson({ needsToken: opts.needsToken })}</script>
<script nonce="${n}">${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
}

/** What the page that asks for the token runs: the token given (or in the address's #token=) becomes the session's cookie. */
const TOKEN_SCRIPT = `
'use strict';
const KEY = 'genpipe-dashboard-token';
const said = document.getElementById('said');
async function give(token) {
  const res = await fetch('api/session', { method: 'POST', headers: { authorization: 'Bearer ' + token } });
  if (!res.ok) { said.textContent = 'that is not the token'; return; }
  sessionStorage.setItem(KEY, token);
  location.reload();
}
// A #token= link, at load or followed in this tab later.
function fromHash() {
  const m = /^#token=([^&]+)/.exec(location.hash);
  if (m) { history.replaceState(null, '', location.pathname + location.search); give(decodeURIComponent(m[1])); }
}
fromHash();
window.addEventListener('hashchange', fromHash);
document.getElementById('form').addEventListener('submit', (e) => {
  e.preventDefault();
  give(document.getElementById('token').value.trim());
});
`;

/** The page served off loopback without the token: it asks for it, and shows nothing of the batch. */
export function tokenPage(nonce: string): string {
  const n = esc(nonce);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>genpipe dashboard</title>
<style nonce="${n}">${DASHBOARD_STYLE} form { padding: 24px; display: flex; gap: 8px; align-items: center; }</style>
</head>
<body>
<form id="form"><label for="token">The dashboard token (printed on stderr when genpipe started):</label>
<input id="token" type="password" autocomplete="off" autofocus><button type="submit">Open</button><span id="said" role="status"></span></form>
<script nonce="${n}">${TOKEN_SCRIPT}</script>
</body>
</html>
`;
}
