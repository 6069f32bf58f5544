// The operator console. Plain JavaScript, no build step: every request goes to /console/api on
// this origin with the session cookie; state-changing ones carry the CSRF header the server asks.
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  const views = ["overview", "tables", "tail", "dlq", "query"];
  let tenant = "";
  let timer = null;

  function qs(params) {
    const p = new URLSearchParams(params || {});
    if (tenant) p.set("tenant", tenant);
    return p.toString();
  }

  // api calls a console route and returns {ok, status, body, headers, error}. A 401 means the
  // session ended: reload, which shows the login form.
  async function api(method, path, params, body) {
    const init = {method, headers: {"X-Wavehouse-Console": "1", "Accept": "application/json"}, credentials: "same-origin"};
    if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
    let res;
    try {
      res = await fetch("/console/api/" + path + "?" + qs(params), init);
    } catch (e) {
      return {ok: false, status: 0, error: "the gateway is unreachable (" + e.message + ")"};
    }
    if (res.status === 401) { location.reload(); return {ok: false, status: 401, error: "logged out"}; }
    let json = null;
    try { json = await res.json(); } catch (e) { /* not JSON */ }
    const out = {ok: res.ok, status: res.status, body: json, headers: res.headers};
    if (!res.ok) out.error = (json && json.error ? json.error : res.statusText) + (json && json.code ? " (" + json.code + ")" : "");
    return out;
  }

  function status(id, text, bad) {
    const el = $(id);
    el.textContent = text || "";
    el.classList.toggle("bad", !!bad);
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function when(ms) { return ms ? new Date(ms).toLocaleTimeString() : "–"; }
  const fmt = v => window.whChart.fmt(v);

  // ---- routing ----
  function show() {
    let view = location.hash.slice(1);
    if (!views.includes(view)) view = "overview";
    for (const v of views) $("view-" + v).hidden = v !== view;
    document.querySelectorAll("nav a").forEach(a => {
      if (a.dataset.view === view) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    });
    clearInterval(timer);
    timer = null;
    const refresh = {overview: loadStats, tables: loadTables, dlq: loadDLQ}[view];
    if (refresh) { refresh(); timer = setInterval(refresh, view === "overview" ? 2000 : 5000); }
    if (view === "tail" || view === "query") loadTableNames();
  }

  // ---- overview ----
  async function loadStats() {
    const r = await api("GET", "stats");
    if (!r.ok) { status("overview-status", "Stats are unavailable: " + r.error, true); return; }
    const s = r.body, t = s.totals;
    status("overview-status", s.series.length ? "Updated " + when(s.at) + " · " + Math.round(s.window_seconds) + " s of history" : "Collecting the first samples…");
    $("total-accepted").textContent = fmt(t.rows_accepted);
    $("total-inserted").textContent = fmt(t.rows_inserted);
    $("total-rejected").textContent = fmt(t.rows_rejected);
    $("total-inserts").textContent = fmt(t.inserts);
    $("total-cache").textContent = fmt(t.cache_hits) + " / " + fmt(t.cache_misses);
    const last = s.series.length ? s.series[s.series.length - 1] : null;
    $("total-dlq").textContent = last ? fmt(last.dlq_entries) : "–";
    const col = k => s.series.map(p => p[k]);
    const chart = window.whChart.draw;
    chart($("chart-rows"), [{label: "accepted", color: "#0b5cad", values: col("accepted_per_sec")},
      {label: "inserted", color: "#1a7f37", values: col("inserted_per_sec")},
      {label: "rejected", color: "#b42318", values: col("rejected_per_sec")}], {title: "rows per second"});
    chart($("chart-requests"), [{label: "2xx", color: "#1a7f37", values: col("requests_2xx_per_sec")},
      {label: "4xx", color: "#9a6700", values: col("requests_4xx_per_sec")},
      {label: "5xx", color: "#b42318", values: col("requests_5xx_per_sec")}], {title: "requests per second"});
    chart($("chart-queue"), [{label: "lag", color: "#8250df", values: col("queue_lag_frames")},
      {label: "unacked", color: "#0b5cad", values: col("queue_unacked_frames")}], {title: "queue frames"});
    chart($("chart-oldest"), [{label: "oldest s", color: "#9a6700", values: col("oldest_unacked_seconds")}], {title: "oldest unacknowledged seconds"});
    chart($("chart-inserts"), [{label: "inserts/s", color: "#0b5cad", values: col("inserts_per_sec")},
      {label: "rows/insert", color: "#1a7f37", values: col("rows_per_insert")}], {title: "inserts"});
    chart($("chart-cache"), [{label: "hit ratio", color: "#1a7f37", values: col("cache_hit_ratio")}], {title: "cache hit ratio", max: 1});
  }

  // ---- tables ----
  let tableNames = [];
  async function loadTables() {
    const r = await api("GET", "tables");
    const body = $("tables-grid").tBodies[0];
    if (!r.ok) { status("tables-status", "Tables are unavailable: " + r.error, true); return; }
    const errs = Object.entries(r.body.errors || {}).map(([k, v]) => k + " is unavailable: " + v);
    status("tables-status", errs.length ? errs.join("; ") : "Database " + r.body.database + " · " + r.body.tables.length + " tables", errs.length > 0);
    body.replaceChildren();
    for (const t of r.body.tables) {
      const tr = document.createElement("tr");
      tr.dataset.table = t.name;
      const th = document.createElement("th"); th.scope = "row"; th.textContent = t.name; tr.appendChild(th);
      const sc = cell(tr, "");
      if (t.columns.length) {
        const d = document.createElement("details"), s = document.createElement("summary");
        s.textContent = t.columns.length + " columns" + (t.engine ? " · " + t.engine : "");
        const ul = document.createElement("ul");
        for (const c of t.columns) { const li = document.createElement("li"); li.textContent = c.name + " " + c.type; ul.appendChild(li); }
        d.append(s, ul); sc.appendChild(d);
      } else sc.textContent = "–";
      cell(tr, fmt(t.rows_per_sec), "num rate");
      cell(tr, when(t.last_insert_at || t.last_part_at), "last");
      cell(tr, String(t.active_parts), "num parts");
      cell(tr, String(t.parts_last_minute), "num ppm");
      cell(tr, String(t.dlq_entries), "num dlq");
      body.appendChild(tr);
    }
    tableNames = r.body.tables.filter(t => t.engine).map(t => t.name);
  }

  async function loadTableNames() {
    if (!tableNames.length) await loadTables();
    const sel = $("tail-table"), cur = sel.value;
    sel.replaceChildren(...tableNames.map(n => new Option(n, n)));
    if (tableNames.includes(cur)) sel.value = cur;
  }

  // ---- live tail ----
  let es = null, lastId = "", tailTable = "";
  function tailOpen(since) {
    if (es) es.close();
    const params = {};
    if (since) params.since = since;
    es = new EventSource("/console/api/stream/" + encodeURIComponent(tailTable) + "?" + qs(params));
    status("tail-status", "Connecting to " + tailTable + "…");
    es.onopen = () => status("tail-status", "Live: " + tailTable);
    es.onerror = () => status("tail-status", "The stream is interrupted; the browser retries from the last id…", true);
    es.addEventListener("rows", e => {
      lastId = e.lastEventId; $("tail-last").textContent = lastId;
      let rows = [];
      try { rows = JSON.parse(e.data); } catch (x) { rows = [e.data]; }
      const ol = $("tail-rows");
      for (const row of rows) {
        const li = document.createElement("li");
        li.textContent = typeof row === "string" ? row : JSON.stringify(row);
        ol.appendChild(li);
      }
      while (ol.children.length > 500) ol.firstChild.remove();
      ol.scrollTop = ol.scrollHeight;
    });
    es.addEventListener("reset", () => status("tail-status", "The stream restarted from the oldest retained row (reset)."));
    es.addEventListener("gap", e => status("tail-status", "Rows were skipped because the page fell behind: " + e.data, true));
    $("tail-pause").disabled = false; $("tail-resume").disabled = true;
  }
  $("tail-form").addEventListener("submit", ev => {
    ev.preventDefault();
    tailTable = $("tail-table").value;
    if (!tailTable) { status("tail-status", "Pick a table first.", true); return; }
    lastId = ""; $("tail-last").textContent = "–"; $("tail-rows").replaceChildren();
    tailOpen("now");
  });
  $("tail-pause").addEventListener("click", () => {
    if (es) es.close();
    es = null;
    status("tail-status", "Paused at " + (lastId || "the start") + ".");
    $("tail-pause").disabled = true; $("tail-resume").disabled = false; $("tail-resume").focus();
  });
  $("tail-resume").addEventListener("click", () => { tailOpen(lastId || "now"); $("tail-pause").focus(); });
  $("tail-clear").addEventListener("click", () => $("tail-rows").replaceChildren());

  // ---- dead letters ----
  let dlqTable = "";
  async function loadDLQ() {
    const r = await api("GET", "dlq");
    if (!r.ok) { status("dlq-status", "The dead-letter queue is unavailable: " + r.error, true); return; }
    const body = $("dlq-tables").tBodies[0];
    body.replaceChildren();
    const rows = r.body.tables.sort((a, b) => a.table.localeCompare(b.table));
    status("dlq-status", rows.length ? rows.length + " tables with dead letters" : "No dead letters.");
    for (const t of rows) {
      const tr = document.createElement("tr");
      tr.dataset.table = t.table;
      const th = document.createElement("th"); th.scope = "row"; th.textContent = t.table; tr.appendChild(th);
      cell(tr, String(t.count), "num");
      const b = document.createElement("button");
      b.type = "button"; b.textContent = "Show entries"; b.className = "secondary";
      b.setAttribute("aria-label", "Show dead letters of " + t.table);
      b.addEventListener("click", () => openDLQ(t.table));
      cell(tr, "").appendChild(b);
      body.appendChild(tr);
    }
  }
  async function openDLQ(table) {
    dlqTable = table;
    $("dlq-detail").hidden = false;
    $("dlq-title").textContent = "Entries of " + table;
    $("dlq-inspect").hidden = true;
    const r = await api("GET", "dlq/" + encodeURIComponent(table), {limit: 100});
    const body = $("dlq-entries").tBodies[0];
    body.replaceChildren();
    if (!r.ok) { report("Could not list the entries: " + r.error); return; }
    for (const e of r.body.entries) {
      const tr = document.createElement("tr");
      cell(tr, String(e.id));
      cell(tr, e.code, "code");
      cell(tr, e.error, "reason");
      cell(tr, String(e.attempts), "num");
      cell(tr, new Date(e.dead_at).toLocaleString());
      const b = document.createElement("button");
      b.type = "button"; b.textContent = "Inspect"; b.className = "secondary";
      b.setAttribute("aria-label", "Inspect entry " + e.id);
      b.addEventListener("click", () => { const p = $("dlq-inspect"); p.hidden = false; p.textContent = JSON.stringify(e, null, 2); p.focus(); });
      cell(tr, "").appendChild(b);
      body.appendChild(tr);
    }
    if (!r.body.entries.length) {
      const tr = document.createElement("tr");
      cell(tr, "No entries left for " + table + ".").colSpan = 6;
      body.appendChild(tr);
    }
  }
  function report(text) { const p = $("dlq-report"); p.hidden = false; p.textContent = text; }
  function confirmAction(text) {
    return new Promise(resolve => {
      const d = $("confirm");
      $("confirm-text").textContent = text;
      d.onclose = () => resolve(d.returnValue === "ok");
      d.returnValue = "";
      d.showModal();
    });
  }
  async function replay(dry) {
    const r = await api("POST", "dlq/" + encodeURIComponent(dlqTable) + "/replay", dry ? {dry_run: "true"} : {});
    const b = r.body || {};
    const rep = r.ok ? b : (b.details || {});
    const invalid = (rep.invalid || []).map(p => "  entry " + p.id + ": " + (p.error || JSON.stringify(p.errors))).join("\n");
    let text = (dry ? "Dry run: " : "Replay: ") + (r.ok ? "" : r.error + "\n") +
      (rep.entries ?? "?") + " entries, " + (rep.rows ?? "?") + " rows" +
      (rep.replayed !== undefined ? ", " + rep.replayed + " replayed" : "") +
      ((rep.invalid || []).length ? "\nStill invalid:\n" + invalid : (r.ok ? "\nAll rows are valid for the table now." : ""));
    report(text);
    if (!dry) { await openDLQ(dlqTable); loadDLQ(); }
  }
  $("dlq-dry").addEventListener("click", () => replay(true));
  $("dlq-replay").addEventListener("click", async () => {
    if (await confirmAction("Replay the dead letters of " + dlqTable + " into the ingest queue?")) replay(false);
  });
  $("dlq-purge").addEventListener("click", async () => {
    if (!await confirmAction("Delete every dead letter of " + dlqTable + "? This cannot be undone.")) return;
    const r = await api("DELETE", "dlq/" + encodeURIComponent(dlqTable));
    report(r.ok ? "Purged " + r.body.purged + " entries." : "Purge failed: " + r.error);
    await openDLQ(dlqTable); loadDLQ();
  });

  // ---- query ----
  async function runQuery() {
    let params;
    try { params = JSON.parse($("query-params").value || "{}"); } catch (e) {
      status("query-status", "Parameters must be a JSON object: " + e.message, true); $("query-params").focus(); return;
    }
    status("query-status", "Running…");
    const t0 = performance.now();
    const r = await api("POST", "query", {}, {sql: $("query-sql").value, params, format: "json"});
    $("query-elapsed").textContent = Math.round(performance.now() - t0) + " ms" +
      (r.ok && r.body.statistics ? " (server " + Math.round(r.body.statistics.elapsed * 1000) + " ms)" : "");
    $("query-cache").textContent = (r.headers && r.headers.get("X-Cache")) || "–";
    const grid = $("query-grid");
    grid.tHead.replaceChildren(); grid.tBodies[0].replaceChildren();
    if (!r.ok) { status("query-status", "The query failed: " + r.error, true); $("query-rows").textContent = "–"; return; }
    status("query-status", "");
    const meta = r.body.meta || [];
    const hr = document.createElement("tr");
    for (const m of meta) { const th = document.createElement("th"); th.scope = "col"; th.textContent = m.name; th.title = m.type; hr.appendChild(th); }
    grid.tHead.appendChild(hr);
    for (const row of r.body.data || []) {
      const tr = document.createElement("tr");
      for (const m of meta) { const v = row[m.name]; cell(tr, typeof v === "object" ? JSON.stringify(v) : String(v)); }
      grid.tBodies[0].appendChild(tr);
    }
    $("query-rows").textContent = String(r.body.rows ?? (r.body.data || []).length);
  }
  $("query-form").addEventListener("submit", ev => { ev.preventDefault(); runQuery(); });
  $("query-sql").addEventListener("keydown", ev => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); runQuery(); } });

  // ---- session ----
  $("logout").addEventListener("click", async () => { await fetch("/console/logout", {method: "POST", headers: {"X-Wavehouse-Console": "1"}}); location.reload(); });
  $("tenant").addEventListener("change", () => {
    tenant = $("tenant").value; localStorage.setItem("wh-console-tenant", tenant);
    tableNames = []; if (es) { es.close(); es = null; } show();
  });
  window.addEventListener("hashchange", () => { show(); $("main").focus(); });

  (async function start() {
    const r = await api("GET", "session");
    if (!r.ok) { const b = $("banner"); b.hidden = false; b.textContent = "The console cannot reach the gateway: " + r.error; return; }
    const sel = $("tenant");
    sel.replaceChildren(...r.body.tenants.map(n => new Option(n, n)));
    const saved = localStorage.getItem("wh-console-tenant");
    tenant = r.body.tenants.includes(saved) ? saved : (r.body.tenants[0] || "");
    sel.value = tenant;
    if (!tenant) { const b = $("banner"); b.hidden = false; b.textContent = "No tenant is configured: add one to the settings directory."; }
    show();
    document.body.dataset.ready = "true";
  })();
})();
