"""The pages (Jinja2 templates, autoescaped), the style sheet and the one script, kept as strings so
that the package needs no data files."""

from __future__ import annotations

CELL = r"""
{% macro show(c, row, name, full=False) -%}
{% if c.kind == "image" -%}
<a href="/blob/{{ row }}/{{ name|urlencode }}"><img class="thumb" src="/thumb/{{ row }}/{{ name|urlencode }}" alt="{{ name }} of row {{ row }}"></a>
<span class="meta">{{ c.mime }}, {{ c.length }} bytes</span>
{%- elif c.kind == "bytes" -%}
<span class="meta">{{ c.length }} bytes</span> <code class="hex">{{ c.hex }}{% if c.more %}…{% endif %}</code>
{%- if full %} <a href="/blob/{{ row }}/{{ name|urlencode }}">download</a>{% endif %}
{%- elif c.kind == "array" -%}
<details class="array"{% if full %} open{% endif %}><summary>{{ c.dtype }} {{ c.shape }} [{{ c["values"][:8]|join(", ") }}{% if c.size > 8 %}, …{% endif %}]</summary>
{%- if c.get("plot") %}<svg class="plot" viewBox="0 0 160 40" width="160" height="40"><polyline points="{{ c.plot }}" fill="none" stroke="#2563eb" stroke-width="1"/></svg>{% endif -%}
<code class="values">{{ c["values"]|join(", ") }}</code>{% if c.more %} <a href="/row/{{ row }}">… {{ c.more }} more</a>{% endif %}</details>
{%- elif c.kind == "text" -%}
<span class="text">{{ c.text }}</span>{% if c.more %}<span class="meta"> … ({{ c.length }} characters)</span>{% endif %}
{%- elif c.kind == "error" -%}
<span class="error">{{ c.text }}</span>
{%- else -%}{{ c.value }}{%- endif %}
{%- endmacro %}
"""

BASE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{ title }} · recordio view</title>
<link rel="stylesheet" href="/static/view.css"><script src="/static/view.js" defer></script></head>
<body><header><a class="brand" href="/">recordio view</a> <span class="path">{{ dataset }}</span>
<nav><a href="/">Overview</a> <a href="{{ link('/rows', view=None, offset=None) }}">Rows</a>
<a href="{{ link('/rows', view='grid', offset=None) }}">Grid</a></nav></header>
<main>
{% if error %}<div class="error" id="error" role="alert">{{ error }}</div>{% endif %}
{% block main %}{% endblock %}
</main></body></html>
"""

OVERVIEW = r"""{% extends "base" %}{% block main %}
{% if info %}
<h1>{{ name }}</h1>
{% if info.desc %}<p class="desc">{{ info.desc }}</p>{% endif %}
<p><strong id="total-rows">{{ info.rows }}</strong> rows (from the index) in {{ info.shards|length }} shard(s);
page size {{ info.page_size }}, header size {{ info.header_size }}, format {{ info.version }}.</p>
<h2>Schema</h2>
<table id="schema"><thead><tr><th>field</th><th>type</th><th>shape</th><th>indexed</th><th>stored</th></tr></thead><tbody>
{% for field, spec in info.schema.items() %}<tr><td>{{ field }}</td><td>{{ spec.type }}</td>
<td>{{ spec.get("shape", "") }}</td><td>{{ "yes" if field in info.index_fields else "" }}</td>
<td>{{ "blob page" if field in (info.blob_fields or []) else "raw page" }}</td></tr>{% endfor %}
</tbody></table>
<h2>Shards</h2>
<table id="shards"><thead><tr><th>file</th><th>rows</th><th>bytes</th><th>pages (raw / blob)</th><th>checksums</th><th>written by</th></tr></thead><tbody>
{% for s in info.shards %}<tr><td>{{ s.file }}</td><td>{{ s.rows }}</td><td>{{ s.apparent_bytes }}</td>
<td>{{ s.pages }} ({{ s.raw_pages }} / {{ s.blob_pages }})</td><td>{{ "yes" if s.checksums else "no" }}</td>
<td>{{ s.get("writer", "") }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
<h2>Verify</h2>
<p>Reads every byte of every shard and checks the structure, the index and the checksums.</p>
<p><button id="verify" type="button">Verify</button> <progress id="verify-progress" max="1" value="0"></progress>
<span id="verify-status"></span></p>
<table id="verify-results"><thead><tr><th>file</th><th>result</th><th>rows</th><th>checksums</th><th>problems</th></tr></thead><tbody></tbody></table>
{% endblock %}
"""

FILTER = r"""
<form class="filter" id="filter" method="get" action="/rows">
{% for text in where %}<span class="chip">{{ text }} <a href="{{ link('/rows', where=where[:loop.index0] + where[loop.index:], offset=None) }}" title="remove">×</a></span>
<input type="hidden" name="where" value="{{ text }}">{% endfor %}
{% if view %}<input type="hidden" name="view" value="{{ view }}">{% endif %}
<select name="field" id="filter-field">{% for f in index_fields %}<option>{{ f }}</option>{% endfor %}</select>
<select name="op" id="filter-op">{% for op in ops %}<option>{{ op }}</option>{% endfor %}</select>
<input name="value" id="filter-value" placeholder="value (in: a,b,c)">
<button type="submit" id="filter-add">Filter</button>
{% if where %}<a href="{{ link('/rows', where=[], offset=None) }}">clear</a>{% endif %}
</form>
"""

FACETS = r"""
{% for f in facets %}<section class="facet" data-field="{{ f.field }}"><h3>{{ f.field }}</h3>
{% if f.get("error") %}<p class="error">{{ f.error }}</p>{% else %}
<ul>{% for v in f["values"] %}<li><a class="facet-value" href="{{ link('/rows', where=where + [f.field ~ '=' ~ v.text], offset=None) }}">{{ v.text }}</a>
<meter value="{{ v.count }}" max="{{ f.top }}"></meter> {{ v.count }}</li>{% endfor %}</ul>
{% if f.get("sampled") %}<p class="meta">{{ f.sampled }}</p>
{% elif not f.complete %}<p class="meta">top {{ f["values"]|length }} of {{ f.distinct }}{% if f.distinct >= 2000 %}+{% endif %} values</p>{% endif %}
{% if f.get("histogram") %}<svg class="hist" viewBox="0 0 200 50" width="200" height="50">
{% for b in f.histogram %}<a href="{{ link('/rows', where=where + b.where, offset=None) }}"><title>{{ b.label }}: {{ b.count }}</title>
<rect x="{{ loop.index0 * f.bar }}" y="{{ 50 - b.height }}" width="{{ f.bar - 1 }}" height="{{ b.height }}" fill="#2563eb"/></a>{% endfor %}
</svg><p class="meta">{{ f.histogram[0].low }} … {{ f.histogram[-1].high }}</p>{% endif %}
{% endif %}</section>{% endfor %}
"""

PAGER = r"""
<nav class="pager" id="pager">
{% if offset > 0 %}<a id="first" href="{{ link('/rows', offset=0) }}">« first</a>
<a id="prev" href="{{ link('/rows', offset=[offset - limit, 0]|max) }}">‹ prev</a>{% endif %}
<span id="range">{{ offset + 1 if count else 0 }}–{{ offset + rows|length }} of {{ count }}</span>
{% if offset + limit < count %}<a id="next" href="{{ link('/rows', offset=offset + limit) }}">next ›</a>
<a id="last" href="{{ link('/rows', offset=((count - 1) // limit) * limit) }}">last »</a>{% endif %}
<form method="get" action="/rows" class="jump">{% for text in where %}<input type="hidden" name="where" value="{{ text }}">{% endfor %}
{% if view %}<input type="hidden" name="view" value="{{ view }}">{% endif %}<input type="hidden" name="limit" value="{{ limit }}">
<label>from match # <input name="offset" type="number" min="0" value="{{ offset }}"></label> <button>Go</button></form>
<form method="get" action="/jump" class="jump">{% for text in where %}<input type="hidden" name="where" value="{{ text }}">{% endfor %}
<label>row <input name="row" id="jump-row" type="number" min="0"></label> <button id="jump-go">Open</button></form>
</nav>
"""

ROWS = r"""{% extends "base" %}{% from "cell" import show %}{% block main %}
{% include "filter" %}
<p id="count"><strong id="match-count">{{ count }}</strong> {{ "matching rows" if where else "rows" }} of {{ total }}</p>
<div class="layout"><aside id="facets"{% if facets is none %} data-src="{{ link('/facets', offset=None, view=None, limit=None) }}"{% endif %}>
{% if facets is none %}<p class="meta" id="facets-pending">counting values…</p>{% else %}{% include "facets" %}{% endif %}</aside>
<section class="rows">
{% include "pager" %}
{% if view == "grid" %}
<div class="grid" id="grid">{% for r in rows %}<figure><a href="{{ link('/row/' ~ r.row, offset=None, view=None) }}">
{% if image_field and r.cells[image_field] and r.cells[image_field].kind == "image" %}<img class="thumb" src="/thumb/{{ r.row }}/{{ image_field|urlencode }}" alt="row {{ r.row }}">{% else %}<span class="meta">no image</span>{% endif %}</a>
<figcaption>#{{ r.row }}{% for f in index_fields[:2] %} · {{ show(r.cells[f], r.row, f) if f in r.cells else "" }}{% endfor %}</figcaption></figure>{% endfor %}</div>
{% else %}
<table id="rows"><thead><tr><th>row</th>{% for f in fields %}<th>{{ f }}</th>{% endfor %}</tr></thead><tbody>
{% for r in rows %}<tr data-row="{{ r.row }}"><td><a class="row-link" href="{{ link('/row/' ~ r.row, offset=None, view=None) }}">{{ r.row }}</a></td>
{% if r.error %}<td colspan="{{ fields|length }}" class="error">{{ r.error }}</td>{% else %}
{% for f in fields %}<td data-field="{{ f }}">{{ show(r.cells[f], r.row, f) }}</td>{% endfor %}{% endif %}</tr>{% endfor %}
</tbody></table>
{% endif %}
</section></div>
{% endblock %}
"""

ROW = r"""{% extends "base" %}{% from "cell" import show %}{% block main %}
<h1 id="row-title">Row {{ row }}</h1>
<nav class="pager">{% if row > 0 %}<a id="prev" href="{{ link('/row/' ~ (row - 1)) }}">‹ row {{ row - 1 }}</a>{% endif %}
<a id="back" href="{{ link('/rows', offset=back) }}">back to the rows</a>
{% if row + 1 < total %}<a id="next" href="{{ link('/row/' ~ (row + 1)) }}">row {{ row + 1 }} ›</a>{% endif %}</nav>
{% if cells %}<table id="row"><tbody>{% for f, c in cells.items() %}<tr><th>{{ f }}</th><td>{{ show(c, row, f, True) }}</td></tr>{% endfor %}
</tbody></table>{% endif %}
{% endblock %}
"""

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#111}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1em;background:#f1f5f9;border-bottom:1px solid #cbd5e1}
header .brand{font-weight:700;color:#111;text-decoration:none} header .path{color:#475569;font-family:monospace}
header nav a{margin-right:.8em} main{padding:1em}
table{border-collapse:collapse;margin:.5em 0} th,td{border:1px solid #e2e8f0;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f8fafc} .error{color:#b91c1c;background:#fef2f2;border:1px solid #fecaca;padding:.5em;white-space:pre-wrap}
.meta{color:#64748b;font-size:12px} code{font-size:12px} code.values{display:block;max-width:40em;word-break:break-all}
img.thumb{max-width:128px;max-height:128px;display:block} .grid{display:flex;flex-wrap:wrap;gap:.5em}
.grid figure{margin:0;padding:.3em;border:1px solid #e2e8f0} .layout{display:flex;gap:1em;align-items:flex-start}
aside{min-width:220px;max-width:260px} aside ul{list-style:none;padding:0;margin:0} aside li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis} aside meter{width:60px}
aside meter{width:80px} .chip{background:#e0f2fe;border-radius:1em;padding:.1em .6em;margin-right:.3em}
.pager{margin:.5em 0;display:flex;gap:.8em;flex-wrap:wrap;align-items:center} .jump{display:inline}
.text{white-space:pre-wrap;word-break:break-word} .filter{margin-bottom:.5em} progress{width:20em}
"""

SCRIPT = """
"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  const facets = document.getElementById("facets");
  if (facets && facets.dataset.src) {          // server-rendered (escaped) HTML of the facets
    const r = await fetch(facets.dataset.src);
    facets.innerHTML = await r.text();
    delete facets.dataset.src;
  }
});
document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("verify");
  if (!button) return;
  const bar = document.getElementById("verify-progress");
  const status = document.getElementById("verify-status");
  const body = document.querySelector("#verify-results tbody");
  function cell(tr, text) { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); }
  function show(s) {
    bar.max = Math.max(s.total, 1); bar.value = s.done;
    status.textContent = s.state === "idle" ? "" : s.state === "running" ? `${s.done} of ${s.total} shard(s) checked`
      : (s.ok ? `OK: ${s.total} shard(s) verified` : `problems found in ${s.shards.filter(x => !x.ok).length} shard(s)`);
    body.replaceChildren();
    for (const r of s.shards) {
      const tr = document.createElement("tr");
      tr.className = r.ok ? "ok" : "bad";
      cell(tr, r.file); cell(tr, r.ok ? "OK" : "PROBLEM"); cell(tr, String(r.rows));
      cell(tr, r.checksums ? `${r.regions} regions` : "none (structure only)");
      cell(tr, r.problems.map(p => `${p.file}: ${p.text}`).join("\\n"));
      body.appendChild(tr);
    }
    button.disabled = s.state === "running";
  }
  async function poll() {
    const s = await (await fetch("/api/verify")).json();
    show(s);
    if (s.state === "running") setTimeout(poll, 250);
  }
  button.addEventListener("click", async () => {
    const r = await fetch("/api/verify", {method: "POST", headers: {"X-Recordio-View": "1"}});
    show(await r.json());
    poll();
  });
  poll();
});
"""

TEMPLATES = {"base": BASE, "cell": CELL, "overview": OVERVIEW, "filter": FILTER, "facets": FACETS,
             "pager": PAGER, "rows": ROWS, "row": ROW}
