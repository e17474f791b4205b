"""The data owner's budget page: the remaining budget over time as a plot, and the query log.

The HTML holds no data. Its script reads the admin token from the address's fragment
(``/budget#token=admin.…``; a fragment is never sent to the server) and fetches
``/v1/admin/budget`` and ``/v1/admin/log`` with it. Without a token, or with a wrong one, it
shows the refusal and no figures.
"""

from __future__ import annotations

__all__ = ["PAGE_HTML", "PAGE_JS"]

PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fastmwem budget</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 60em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dt { font-weight: bold; } #error { color: #a00; font-weight: bold; }
table { border-collapse: collapse; font-size: 90%; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
svg { border: 1px solid #ccc; background: #fafafa; }
</style></head>
<body><h1>Privacy budget</h1>
<p id="error" hidden></p>
<section id="figures" hidden>
<dl><dt>epsilon</dt><dd id="epsilon"></dd><dt>spent</dt><dd id="spent"></dd>
<dt>remaining</dt><dd id="remaining"></dd><dt>updates</dt><dd id="updates"></dd></dl>
<h2>Remaining budget over time</h2>
<svg id="plot" width="600" height="220" role="img" aria-label="remaining budget over time"></svg>
<h2>Query log</h2>
<table id="log"><thead><tr><th>time</th><th>analyst</th><th>query</th><th>source</th>
<th>value</th><th>charged</th></tr></thead><tbody></tbody></table>
</section>
<script src="/budget.js"></script></body></html>
"""

PAGE_JS = r"""
"use strict";
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
function plot(svg, history, epsilon) {
  const ns = "http://www.w3.org/2000/svg", w = 600, h = 220, pad = 30;
  const points = [[0, epsilon]].concat(history.map((r, i) => [i + 1, r.remaining]));
  const n = Math.max(points.length - 1, 1);
  const xy = points.map(([i, r]) =>
    [pad + (w - 2 * pad) * i / n, h - pad - (h - 2 * pad) * (epsilon > 0 ? r / epsilon : 0)]);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", xy.map(p => p.join(",")).join(" "));
  line.setAttribute("fill", "none"); line.setAttribute("stroke", "#06c");
  line.setAttribute("stroke-width", "2"); line.setAttribute("id", "curve");
  svg.appendChild(line);
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", pad); label.setAttribute("y", 16);
  label.textContent = "remaining epsilon after each charge (" + history.length + " charges)";
  svg.appendChild(label);
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
  plot(document.getElementById("plot"), budget.history, budget.epsilon);
  const body = document.querySelector("#log tbody");
  for (const row of log) {
    const tr = document.createElement("tr");
    for (const cell of [new Date(row.time * 1000).toISOString(), row.analyst,
                        JSON.stringify(row.query).slice(0, 80), row.source, fmt(row.value),
                        fmt(row.charged)]) {
      const td = document.createElement("td"); td.textContent = cell; tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  document.getElementById("figures").hidden = false;
  document.body.setAttribute("data-loaded", "1");
}
load().catch(err => refuse(String(err)));
"""
