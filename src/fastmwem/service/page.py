"""The data owner's budget page: the figures, each analyst's totals, a chart of the budget over
time (inline SVG, labelled axes) and the query log with each answer's 95% interval.

The HTML holds no data and loads nothing from the network (its script is ``/budget.js``, the
chart is drawn in the page). The script reads the admin token from the address's fragment
(``/budget#token=admin.…``; a fragment is never sent to the server) and fetches
``/v1/admin/budget`` and ``/v1/admin/log`` with it. Without a token, or with a wrong one, it
shows the refusal and no figures.
"""

from __future__ import annotations

__all__ = ["PAGE_HTML", "PAGE_JS"]

PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fastmwem budget</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 64em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dt { font-weight: bold; } #error { color: #a00; font-weight: bold; }
table { border-collapse: collapse; font-size: 90%; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
td.num { text-align: right; }
svg { border: 1px solid #ccc; background: #fafafa; font-size: 11px; }
</style></head>
<body><h1>Privacy budget</h1>
<p id="error" hidden></p>
<section id="figures" hidden>
<dl><dt>epsilon</dt><dd id="epsilon"></dd><dt>spent</dt><dd id="spent"></dd>
<dt>remaining</dt><dd id="remaining"></dd><dt>updates</dt><dd id="updates"></dd></dl>
<h2>Analysts</h2>
<table id="analysts"><thead><tr><th>analyst</th><th>budget</th><th>spent</th><th>remaining</th>
<th>answers</th><th>measured</th></tr></thead><tbody></tbody></table>
<h2>Budget over time</h2>
<svg id="plot" width="680" height="320" role="img"
 aria-label="remaining epsilon and each analyst's spent epsilon over time"></svg>
<h2>Query log</h2>
<table id="log"><thead><tr><th>time (UTC)</th><th>analyst</th><th>query</th><th>source</th>
<th>value</th><th>95% interval</th><th>charged</th></tr></thead><tbody></tbody></table>
</section>
<script src="/budget.js"></script></body></html>
"""

PAGE_JS = r"""
"use strict";
const NS = "http://www.w3.org/2000/svg";
const COLOURS = ["#c60", "#080", "#808", "#088", "#860", "#06c"];
function refuse(message) {
  const el = document.getElementById("error");
  el.textContent = "Refused: " + message;
  el.hidden = false;
  document.getElementById("figures").hidden = true;
}
function fmt(x) {
  const text = Number(x).toPrecision(6);
  return text.includes("e") ? text : text.replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}
function svg(parent, tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  parent.appendChild(el);
  return el;
}
function clock(t, span) {
  const iso = new Date(t * 1000).toISOString();
  return span < 86400 ? iso.slice(11, 19) : iso.slice(0, 10) + " " + iso.slice(11, 16);
}
// Each series is a step line: [[time, value], ...], drawn from the first time to the last.
function plot(el, series, epsilon, start, end) {
  const w = 680, h = 320, left = 64, right = 150, top = 16, bottom = 52;
  const t0 = start, t1 = end > start ? end : start + 1, span = t1 - t0;
  const top_value = epsilon > 0 ? epsilon : 1;
  const x = t => left + (w - left - right) * (t - t0) / span;
  const y = v => h - bottom - (h - top - bottom) * v / top_value;
  svg(el, "line", {x1: left, y1: h - bottom, x2: w - right, y2: h - bottom, stroke: "#333",
                   id: "x-axis"});
  svg(el, "line", {x1: left, y1: top, x2: left, y2: h - bottom, stroke: "#333", id: "y-axis"});
  for (let i = 0; i <= 4; i++) {
    const v = top_value * i / 4, t = t0 + span * i / 4;
    svg(el, "text", {x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "y-tick"}, fmt(v));
    svg(el, "line", {x1: left, y1: y(v), x2: w - right, y2: y(v), stroke: "#ddd"});
    svg(el, "text", {x: x(t), y: h - bottom + 16, "text-anchor": "middle", class: "x-tick"},
        clock(t, span));
  }
  svg(el, "text", {x: (left + w - right) / 2, y: h - 10, "text-anchor": "middle",
                   id: "x-label"}, "time (UTC)");
  svg(el, "text", {x: 16, y: (top + h - bottom) / 2, "text-anchor": "middle", id: "y-label",
                   transform: `rotate(-90 16 ${(top + h - bottom) / 2})`}, "epsilon");
  series.forEach((s, i) => {
    const points = [];
    let last = s.start;
    points.push([x(t0), y(last)]);
    for (const [t, v] of s.steps) { points.push([x(t), y(last)], [x(t), y(v)]); last = v; }
    points.push([x(t1), y(last)]);
    svg(el, "polyline", {points: points.map(p => p.join(",")).join(" "), fill: "none",
                         stroke: s.colour, "stroke-width": i ? 1.5 : 2.5, id: s.id,
                         "data-last": last});
    svg(el, "line", {x1: w - right + 12, y1: top + 8 + 16 * i, x2: w - right + 30,
                     y2: top + 8 + 16 * i, stroke: s.colour, "stroke-width": 2.5});
    svg(el, "text", {x: w - right + 34, y: top + 12 + 16 * i, class: "legend"}, s.name);
  });
}
function series(budget) {
  const history = budget.history;
  const remaining = {id: "curve", name: "remaining (all)", colour: "#06c",
                     start: budget.epsilon, steps: history.map(r => [r.time, r.remaining])};
  const per = new Map();
  for (const r of history) {
    const name = r.analyst === null ? "data owner" : r.analyst;
    if (!per.has(name)) per.set(name, {total: 0, steps: []});
    const s = per.get(name);
    s.total += r.cost;
    s.steps.push([r.time, s.total]);
  }
  const out = [remaining];
  [...per.entries()].forEach(([name, s], i) => out.push({
    id: "spent-" + i, name: "spent: " + name, colour: COLOURS[i % COLOURS.length], start: 0,
    steps: s.steps}));
  return out;
}
function row(body, cells, numeric) {
  const tr = document.createElement("tr");
  cells.forEach((cell, i) => {
    const td = document.createElement("td");
    td.textContent = cell;
    if (numeric.includes(i)) td.className = "num";
    tr.appendChild(td);
  });
  body.appendChild(tr);
}
async function load() {
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (!token) { refuse("this page needs the admin token: open /budget#token=<admin token>"); return; }
  const headers = { Authorization: "Bearer " + token };
  const [b, l] = await Promise.all([fetch("/v1/admin/budget", { headers }),
                                    fetch("/v1/admin/log", { headers })]);
  if (!b.ok || !l.ok) {
    const body = await (b.ok ? l : b).json().catch(() => ({ error: "HTTP " + b.status }));
    refuse(body.error || ("HTTP " + b.status)); return;
  }
  const budget = await b.json(), log = await l.json();
  document.getElementById("epsilon").textContent = fmt(budget.epsilon);
  document.getElementById("spent").textContent = fmt(budget.spent);
  document.getElementById("remaining").textContent = fmt(budget.remaining);
  document.getElementById("updates").textContent = budget.updates + " of " + budget.max_updates;
  const analysts = document.querySelector("#analysts tbody");
  for (const a of budget.analysts) {
    const mine = log.filter(r => r.analyst === a.name);
    row(analysts, [a.name, fmt(a.budget), fmt(a.spent), fmt(a.remaining), mine.length,
                   mine.filter(r => r.source === "measured").length], [1, 2, 3, 4, 5]);
  }
  const times = budget.history.map(r => r.time).concat(log.map(r => r.time));
  const now = Date.now() / 1000;
  plot(document.getElementById("plot"), series(budget), budget.epsilon,
       times.length ? Math.min(...times) : now, Math.max(now, ...times));
  const body = document.querySelector("#log tbody");
  for (const r of log) {
    const interval = r.interval ? "[" + fmt(r.interval[0]) + ", " + fmt(r.interval[1]) + "]" : "";
    row(body, [new Date(r.time * 1000).toISOString(), r.analyst,
               JSON.stringify(r.query).slice(0, 80), r.source, fmt(r.value), interval,
               fmt(r.charged)], [4, 6]);
  }
  document.getElementById("figures").hidden = false;
  document.body.setAttribute("data-loaded", "1");
}
load().catch(err => refuse(String(err)));
"""
