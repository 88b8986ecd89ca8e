// The transactions page: re-reads the REST listing every few seconds (the same session) and
// renders it in place; an open transaction's start shows with its zone and age.
(function () {
  "use strict";
  const body = document.body;
  const rows = document.querySelector("#transactions tbody");
  const status = document.getElementById("txn-status");
  const error = document.getElementById("error");
  const total = document.getElementById("txn-total");
  const INTERVAL_MS = 2000;
  // Operators get an "Abort…" link on rows in these states (the page's confirmation panel).
  const abortable = body.dataset.canAbort ? body.dataset.canAbort.split(" ") : null;
  const num = (v) => (v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US"));
  const EMPTY = "no transactional ids yet: they appear when a producer with a transactional.id initialises its transactions";
  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  };
  function age(ms) {
    const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (seconds < 60) return `${seconds} s ago`;
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return `${minutes} min ${seconds % 60} s ago`;
    return `${Math.floor(minutes / 60)} h ${minutes % 60} min ago`;
  }
  const when = (ms) => (ms === null || ms === undefined ? "–"
    : `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC (${age(ms)})`);

  function render(listing) {
    const data = listing.data;
    const count = listing.metadata.total;
    total.textContent = `${num(count)} transactional id${count === 1 ? "" : "s"}` +
      (count > data.length ? `, the first ${num(data.length)} shown` : "");
    rows.replaceChildren(...data.map((t) => {
      const row = el("tr");
      row.dataset.id = t.transactional_id;
      row.dataset.state = t.state;
      const id = el("td", undefined, "id");
      id.title = t.transactional_id;
      id.append(el("code", t.transactional_id, "long-id"));
      const open = t.duration_ms !== null;  // the start of an open transaction only
      const started = el("td", open ? when(t.transaction_start_time_ms) : "–", "started");
      started.dataset.ms = open ? t.transaction_start_time_ms : "";
      row.append(id, el("td", t.state, "state"), el("td", t.producer_id, "producer-id"),
        el("td", t.producer_epoch ?? "–", "epoch"), el("td", t.coordinator_id, "coordinator"),
        el("td", t.transaction_timeout_ms === null ? "–" : `${num(t.transaction_timeout_ms)} ms`, "timeout"),
        started,
        el("td", t.partitions.map((p) => `${p.topic_name}-${p.partition_id}`).join(", ") || "–", "partitions long-id"));
      if (abortable) {
        const actions = el("td", undefined, "actions");
        if (abortable.includes(t.state)) {
          const link = el("a", "Abort…", "abort");
          link.href = `?abort=${encodeURIComponent(t.transactional_id)}`;
          actions.append(link);
        }
        row.append(actions);
      }
      return row;
    }));
    if (!data.length) {
      const row = el("tr", undefined, "empty-state");
      const state = new URLSearchParams(location.search).get("state");
      const cell = el("td", state ? `no transactional ids in state ${state}` : EMPTY, "empty-row");
      cell.colSpan = abortable ? 9 : 8;
      row.append(cell);
      rows.append(row);
    }
  }

  async function poll() {
    try {
      const answer = await fetch(body.dataset.api, { headers: { Accept: "application/json" } });
      const payload = await answer.json();
      if (!answer.ok) throw new Error(payload.message || `HTTP ${answer.status}`);
      render(payload);
      error.hidden = true;
      status.dataset.state = "live";
      status.textContent = "live";
    } catch (exc) {
      error.hidden = false;
      error.textContent = String(exc.message || exc);
      status.dataset.state = "error";
      status.textContent = "not updating";
    }
    setTimeout(poll, INTERVAL_MS);
  }
  document.querySelectorAll("#transactions td.started").forEach((cell) => {
    if (cell.dataset.ms) cell.textContent = when(Number(cell.dataset.ms));
  });
  poll();
})();
