/** The dashboard page's styles (inline, under the page's nonce). */
export const DASHBOARD_STYLE = `
:root { --row: 44px; color-scheme: light dark; font: 14px/1.35 system-ui, sans-serif; }
body { margin: 0; display: grid; grid-template-rows: auto auto 1fr; height: 100vh; }
header { padding: 8px 14px; border-bottom: 1px solid #8884; display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
header h1 { font-size: 16px; margin: 0; }
#batch, #quota, #workers { color: #777; }
#tokenbox { margin-left: auto; display: flex; gap: 6px; align-items: center; }
button { font: inherit; padding: 3px 10px; cursor: pointer; }
button:disabled { cursor: default; opacity: .5; }
.why { color: #777; font-size: 12px; margin: 0 6px; }
#glance { padding: 6px 14px; display: flex; gap: 6px; flex-wrap: wrap; align-items: center; border-bottom: 1px solid #8884; }
.chip { border: 1px solid #8886; border-radius: 12px; padding: 2px 10px; background: none; }
.chip[aria-pressed="true"] { background: #36c3; border-color: #36c; }
#search { margin-left: auto; min-width: 220px; padding: 3px 6px; }
main { display: grid; grid-template-columns: 1fr 360px; min-height: 0; }
#left { display: grid; grid-template-rows: auto 1fr; min-height: 0; }
#groups { padding: 4px 14px; max-height: 120px; overflow: auto; }
#groups:empty { display: none; }
#groups button { display: block; border: none; background: none; text-align: left; padding: 1px 0; color: #c33; }
#list { overflow-y: auto; position: relative; min-height: 0; }
#spacer { position: relative; }
.row { position: absolute; left: 0; right: 0; height: var(--row); display: grid; grid-template-columns: 48px minmax(160px, 2fr) 110px 140px minmax(120px, 1fr) 70px 2fr; gap: 8px; align-items: center; padding: 0 10px; border-bottom: 1px solid #8882; cursor: pointer; white-space: nowrap; }
.row > span { overflow: hidden; text-overflow: ellipsis; }
.row:hover, .row.sel { background: #36c2; }
.row img, .row .ph { width: 40px; height: 40px; object-fit: cover; background: #8883; border-radius: 3px; }
.st-failed .status, .st-failed .reason { color: #c33; }
.st-succeeded .status, .st-reused .status { color: #2a2; }
.st-pending .status { color: #c80; }
.mono { font-family: ui-monospace, monospace; font-size: 12px; }
aside { border-left: 1px solid #8884; padding: 10px 14px; overflow: auto; }
aside h2 { font-size: 15px; word-break: break-all; }
aside table { border-collapse: collapse; width: 100%; font-size: 12px; }
aside td { border-top: 1px solid #8883; padding: 2px 4px; vertical-align: top; word-break: break-word; }
aside img { max-width: 100%; }
aside td.mono, aside td:first-child { white-space: nowrap; word-break: normal; }
#history td:nth-child(2) { white-space: nowrap; }
#note { padding: 4px 14px; color: #777; }
#outputs figure { margin: 0 0 8px; }
#outputs img { max-width: 100%; }
#request { white-space: pre-wrap; word-break: break-word; }
`;
