"""The report page's stylesheet and script, inlined into every page (no network, ever)."""

CSS = r"""
:root { --ink:#1d2430; --muted:#5b6678; --line:#d9dee7; --bg:#f6f7f9; --card:#fff;
  --run:#2f6fdf; --dup:#e0a100; --batch:#7b3fbf; --ok:#1e8e3e; --bad:#c62828;
  --effect:#e8590c; --capture:#0c8599; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--ink); background:var(--bg); }
header.top { background:#18202c; color:#fff; padding:16px 28px; }
header.top h1 { margin:0 0 4px; font-size:20px; font-weight:600; }
header.top .sub { color:#b9c2d0; font-size:13px; }
.asof { background:#fff4d6; border-bottom:2px solid var(--dup); padding:10px 28px;
  font-weight:600; }
main { padding:18px 28px 60px; max-width:1500px; }
section.card { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:14px 18px; margin:0 0 18px; }
h2 { font-size:16px; margin:0 0 10px; }
h3 { font-size:14px; margin:16px 0 8px; color:var(--muted); text-transform:uppercase;
  letter-spacing:.04em; }
.badge { display:inline-block; padding:3px 10px; border-radius:999px; font-weight:600;
  font-size:13px; color:#fff; }
.badge.ok { background:var(--ok); } .badge.bad { background:var(--bad); }
.facts { display:flex; flex-wrap:wrap; gap:6px 22px; color:var(--muted); margin:6px 0; }
.facts b { color:var(--ink); }
table { border-collapse:collapse; width:100%; font-size:13px; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line);
  vertical-align:top; }
th { color:var(--muted); font-weight:600; background:#fafbfc; position:sticky; top:0; }
td.time { white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
code, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
  font-size:12px; }
tr.ev { cursor:pointer; } tr.ev:hover { background:#eef3fd; }
tr.dup td.what { color:#9a6b00; font-weight:600; }
tr.broken { background:#fdecea; } tr.broken td.what { color:var(--bad); font-weight:700; }
tr.selected { outline:2px solid var(--run); outline-offset:-2px; background:#e6efff; }
tr.problem td { color:var(--bad); }
.scroll { overflow:auto; border:1px solid var(--line); border-radius:6px; background:#fff; }
.scroll.tall { max-height:520px; }
details.state, details.diff { margin-top:4px; }
details summary { cursor:pointer; color:var(--run); font-size:12px; }
details pre { margin:4px 0; padding:6px 8px; background:#f6f8fb; border-radius:4px;
  font-size:12px; max-width:640px; overflow-x:auto; white-space:pre-wrap; }
.diff .dadd { color:var(--ok); } .diff .ddel { color:var(--bad); } .diff .dchg { color:#8a5a00; }
.state-note { color:var(--muted); font-size:12px; margin-top:4px; }
.flow { border:1px solid var(--line); border-radius:6px; background:#fff; }
svg.lanes { display:block; font-size:11px; }
svg.lanes.fit { width:100%; height:auto; }
.pause rect { fill:#eef0f4; opacity:.8; } .pause text { fill:var(--muted); text-anchor:middle;
  font-style:italic; }
.axis .tick-time { fill:var(--ink); } .pause-key { fill:#eef0f4; stroke:#c9ced8; }
.facts .bad, .facts .bad b { color:var(--bad); }
.deadline path { stroke:var(--bad); stroke-width:1.6; stroke-dasharray:3 2; }
.deadline text { fill:var(--bad); font-size:10px; }
.stop .bar { stroke:var(--bad); stroke-width:3; } .stop .cross { stroke:var(--bad);
  stroke-width:2.2; } .stop { cursor:help; }
.lane-bg { fill:#fff; stroke:var(--line); }
.lane-batch .lane-bg { fill:#faf6ff; } .lane-session .lane-bg { fill:#f4f4f4; }
.lane-subgraph .lane-bg { fill:#f5f9ff; } .lane-branch .lane-bg { fill:#fff8f2; }
.lane-label { font-weight:600; fill:var(--ink); font-size:12px; }
.lane-id { fill:var(--muted); font-weight:400; font-family:ui-monospace,monospace; }
.axis line { stroke:#eef0f4; } .axis text { fill:var(--muted); text-anchor:middle; }
.link { fill:none; stroke-width:1.6; opacity:.75; }
.link-parent { stroke:var(--run); stroke-dasharray:5 3; }
.link-replay { stroke:var(--dup); }
.link-resumes { stroke:var(--batch); stroke-dasharray:2 3; }
.mark, .bin { cursor:pointer; }
.mark:hover, .mark.selected { filter:drop-shadow(0 0 3px #1d2430); }
.k-checkpoint > *:not(title) { fill:var(--run); }
.k-duplicate > *:not(title) { fill:var(--dup); stroke:#8a6200; stroke-width:1.5; }
.k-created > *:not(title) { fill:var(--batch); }
.k-claim > *:not(title) { fill:var(--ok); }
.k-stale polygon { fill:#9aa3b2; } .k-stale .cross { stroke:var(--bad); stroke-width:2.2; }
.k-capture > *:not(title) { fill:var(--capture); }
.k-effect > *:not(title) { fill:var(--effect); }
.k-finish > *:not(title) { fill:#0b5d1e; }
.k-expired > *:not(title) { fill:#fff; stroke:#7a8494; stroke-width:2; }
.k-unresolved > *:not(title) { fill:#fff; stroke:var(--bad); stroke-width:2; }
.k-reconcile > *:not(title) { fill:#b02a8f; }
.k-tombstone > *:not(title) { fill:#222; }
.k-fork > circle { fill:var(--run); } .k-fork > circle.fork-ring { fill:none;
  stroke:var(--effect); stroke-width:2.2; }
.k-question > circle { fill:var(--batch); } .k-answer > circle { fill:var(--ok); }
.k-failed > circle { fill:var(--bad); }
.k-question .glyph, .k-answer .glyph, .k-failed .glyph { fill:#fff; font-weight:700;
  text-anchor:middle; font-size:11px; }
.caption { font-size:10px; fill:#3d4757; text-anchor:middle; cursor:pointer; }
.link-answers { stroke:var(--batch); stroke-width:2; }
.link-fork { stroke:var(--effect); stroke-width:2; stroke-dasharray:6 3; }
ul.tree li .fork { background:#ffe8d6; color:#a03d00; font-weight:600; }
ul.tree li .note { color:var(--muted); margin-left:6px; white-space:normal; }
table.qa td pre { margin:0; white-space:pre-wrap; font-size:12px; }
table.index .bad, table.qa .bad { color:var(--bad); } tr.bad-subject td { background:#fdecea; }
.k-writes > *:not(title) { fill:#fff; stroke:var(--run); stroke-width:1.5; }
.k-undecodable rect { fill:var(--bad); } .k-undecodable .glyph { fill:#fff;
  font-weight:700; text-anchor:middle; font-size:11px; }
.k-other > *:not(title) { fill:#7a8494; }
.broken .ring { fill:none !important; stroke:var(--bad) !important; stroke-width:2.5; }
.bin.broken rect { stroke:var(--bad); stroke-width:2; }
.legend { display:flex; flex-wrap:wrap; gap:4px 16px; font-size:12px; color:var(--muted);
  margin:8px 0 0; }
.legend svg { vertical-align:middle; margin-right:4px; }
ul.tree { list-style:none; margin:0; padding:0; font-size:13px; }
ul.tree li { padding:2px 0 2px calc(min(var(--d), 40) * 18px); white-space:nowrap; cursor:pointer; }
ul.tree li::before { content:"└ "; color:#b5bdca; }
ul.tree li.root::before { content:"● "; color:var(--run); }
ul.tree li.fold { color:var(--muted); font-style:italic; cursor:default; }
.tag { display:inline-block; font-size:11px; padding:0 6px; border-radius:4px;
  margin-left:6px; background:#eef1f5; color:var(--muted); }
.tag.dup { background:#fff1c2; color:#7a5600; font-weight:600; }
.tag.broken { background:var(--bad); color:#fff; font-weight:700; }
.tree li.broken > code { color:var(--bad); text-decoration:line-through; }
.note { color:var(--muted); font-size:12px; margin:6px 0 0; }
#detail { position:fixed; right:18px; top:18px; bottom:18px; width:440px; background:#fff;
  border:1px solid var(--line); border-radius:8px; box-shadow:0 8px 30px rgba(0,0,0,.18);
  display:none; flex-direction:column; z-index:10; }
#detail.open { display:flex; }
#detail header { display:flex; justify-content:space-between; align-items:center;
  padding:10px 14px; border-bottom:1px solid var(--line); font-weight:600; }
#detail button { border:0; background:#eef1f5; border-radius:4px; padding:3px 9px;
  cursor:pointer; }
#detail pre { margin:0; padding:12px 14px; overflow:auto; flex:1; font-size:12px;
  white-space:pre-wrap; word-break:break-all; }
input.filter { padding:5px 8px; border:1px solid var(--line); border-radius:4px;
  width:280px; margin:0 0 8px; }
nav.sessions a { margin-right:12px; }
"""

SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('event-data').textContent);
  var panel = document.getElementById('detail');
  var body = document.getElementById('detail-body');
  var title = document.getElementById('detail-title');
  function select(pos) {
    document.querySelectorAll('.selected').forEach(function (el) {
      el.classList.remove('selected');
    });
    document.querySelectorAll('[data-pos="' + pos + '"]').forEach(function (el) {
      el.classList.add('selected');
    });
  }
  function show(el) {
    var pos = el.getAttribute('data-pos');
    var full = data[pos];
    var count = el.getAttribute('data-count');
    title.textContent = count ? count + ' events from #' + pos : 'Event #' + pos;
    if (full && !count) {
      body.textContent = JSON.stringify(full, null, 2);
    } else {
      var tip = el.querySelector('title');
      body.textContent = (tip ? tip.textContent : '') +
        (full ? '' : '\\n\\n(not listed in this report: `eventlog log --from-position ' +
         pos + ' --limit 1 --json` shows it in full)');
    }
    panel.classList.add('open');
    select(pos);
  }
  document.addEventListener('click', function (e) {
    var el = e.target.closest('[data-pos]');
    if (el) { show(el); }
  });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') { panel.classList.remove('open'); }
    if (e.key === 'Enter' && e.target.closest && e.target.closest('[data-pos]')) {
      show(e.target.closest('[data-pos]'));
    }
  });
  document.getElementById('detail-close').addEventListener('click', function () {
    panel.classList.remove('open');
  });
  document.querySelectorAll('input.filter').forEach(function (input) {
    input.addEventListener('input', function () {
      var needle = input.value.toLowerCase();
      var rows = document.querySelectorAll('#' + input.getAttribute('data-table') + ' tr.ev');
      var shown = 0;
      rows.forEach(function (row) {
        var hit = row.textContent.toLowerCase().indexOf(needle) >= 0;
        row.style.display = hit ? '' : 'none';
        if (hit) { shown += 1; }
      });
      var count = document.getElementById(input.getAttribute('data-table') + '-count');
      if (count) {
        count.textContent = needle ? shown + ' of ' + rows.length : String(rows.length);
      }
    });
  });
})();
"""
