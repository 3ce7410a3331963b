/** The style sheet of report.html (inline: the page loads nothing). */
export const PAGE_CSS = `
:root{--ok:#2e7d32;--bad:#c62828;--warn:#b26a00;--skip:#6b6b6b;--run:#1565c0;--line:#e3e3e3;--bg:#fafafa;--muted:#666}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1d;background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:32px 0 10px}
.muted{color:var(--muted)}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.banner{margin:16px 0;padding:12px 16px;border-radius:8px;font-weight:600}
.banner.stopped{background:#fdecea;border:1px solid #f5c2c0;color:var(--bad)}
.banner.emulator{background:#fff4e0;border:1px solid #f3d19e;color:var(--warn)}
.banner.ended{background:#f4f4f4;border:1px solid var(--line);color:#333}
.banner.running{background:#e8f0fe;border:1px solid #c3d5f7;color:var(--run)}
.banner.journal{background:#fff;border:1px solid var(--line);color:#333;font-weight:400}
.totals{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.total{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:110px}
.total b{display:block;font-size:24px;line-height:1.1}
.total.succeeded b{color:var(--ok)}.total.failed b{color:var(--bad)}.total.skipped b{color:var(--skip)}
.total.unprocessed b{color:var(--warn)}.total.pending b{color:var(--run)}
.total.failed.some{border-color:#f5c2c0;background:#fdecea}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f3f3f3;font-weight:600}
table.failures{border-color:#f5c2c0}
table.failures th{background:#fdecea;color:var(--bad)}
td.reason{color:var(--bad);font-weight:500}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.badge.succeeded{background:var(--ok)}.badge.failed{background:var(--bad)}.badge.skipped{background:var(--skip)}
.badge.unprocessed{background:var(--warn)}.badge.pending{background:var(--run)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:14px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card.chain{grid-column:1/-1}
.card.failed{border-color:#f5c2c0;box-shadow:inset 4px 0 0 var(--bad)}
.card header{display:flex;gap:8px;align-items:center;margin-bottom:8px}
.card .name{font-weight:600;overflow-wrap:anywhere}
.media{display:flex;gap:10px;align-items:flex-start;flex-wrap:wrap}
figure{margin:0;display:flex;flex-direction:column;align-items:center;gap:3px;max-width:130px}
figure img,.ph,.prompt-in{width:120px;height:120px;object-fit:contain;border-radius:6px;border:1px solid var(--line);
 background-color:#fff;background-image:linear-gradient(45deg,#eee 25%,transparent 25%),linear-gradient(-45deg,#eee 25%,transparent 25%),linear-gradient(45deg,transparent 75%,#eee 75%),linear-gradient(-45deg,transparent 75%,#eee 75%);
 background-size:12px 12px;background-position:0 0,0 6px,6px -6px,-6px 0}
figure.small img,figure.small .ph{width:64px;height:64px}
figcaption{font-size:11.5px;color:var(--muted);text-align:center;overflow-wrap:anywhere}
.ph{display:flex;align-items:center;justify-content:center;text-align:center;color:var(--muted);font-size:12px;background:#f1f1f1;padding:6px}
.prompt-in{background:#fffdf5;font-size:11.5px;padding:6px;overflow:hidden;text-align:left;white-space:pre-wrap;overflow-wrap:anywhere}
.arrow{align-self:center;font-size:20px;color:#aaa;padding:0 2px;display:flex;flex-direction:column;align-items:center}
.arrow small{font-size:10.5px;color:var(--muted);white-space:nowrap}
figure.failed .ph{color:var(--bad);background:#fdecea;border-color:#f5c2c0;font-size:11px;line-height:16px}
figure.failed .ph span{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:6;overflow:hidden;overflow-wrap:break-word}
figure.failed figcaption{color:var(--bad)}
.play{font-size:11px;color:var(--run)}
.reason{margin:8px 0 0;color:var(--bad);font-weight:500;overflow-wrap:anywhere}
.attempts{margin:6px 0 0;font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.card.skipped .reason,.card.unprocessed .reason{color:var(--warn)}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:10px 0 0;font-size:12.5px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.links{margin-top:6px;font-size:12.5px}
a{color:var(--run)}
.timeline-wrap{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px;overflow-x:auto}
svg.timeline{display:block;font:11px system-ui,sans-serif}
svg .grid{stroke:#ececec}
svg .tick{fill:#777;text-anchor:middle}
svg .label{fill:#333;text-anchor:end}
svg .label.failed{fill:#c62828;font-weight:600}
svg rect.running{opacity:.55}
.legend{display:flex;flex-wrap:wrap;gap:12px;list-style:none;padding:0;margin:0 0 8px;font-size:12.5px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
footer{margin:32px 0 8px;color:var(--muted);font-size:12px}
#controls{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin:0 0 12px;padding:10px 12px;background:#fff;border:1px solid var(--line);border-radius:8px;position:sticky;top:0;z-index:1}
#controls[hidden]{display:none}
.statuses{display:flex;flex-wrap:wrap;gap:4px}
.statuses a{padding:3px 10px;border-radius:999px;border:1px solid var(--line);text-decoration:none;color:#333;white-space:nowrap}
.statuses a.on{background:#1d1d1d;border-color:#1d1d1d;color:#fff}
#search{font:inherit;padding:4px 8px;border:1px solid #ccc;border-radius:6px;min-width:220px}
#sort{font:inherit;padding:3px 6px}
#shown{color:var(--muted)}
#filter a{margin-left:4px}
.pager{margin:10px 0;display:flex;gap:12px;align-items:center}
.pager .off{color:#bbb}
#controls .pager{margin:0}
td.n{text-align:right;font-variant-numeric:tabular-nums;width:4em}
table.failures td.reason a{color:inherit}
table.failures tr.on td{background:#fdecea}
#failures var{font-style:normal;background:#fff1c2;border-radius:3px;padding:0 2px}
details{margin-top:8px}
.card{content-visibility:auto;contain-intrinsic-size:auto 260px}
`;
