// The Spark loads pages. A load's page: live.js delivers the load's state (pushed by its
// Celery task over Channels); this renders status, progress bar (stage k of n, tasks x/y),
// result and cancel button in place, and refreshes the log tail from the dashboard's API
// (never from the worker or Spark). The loads list: each pushed load updates its row.
(function () {
  "use strict";
  const ENDED = ["succeeded", "failed", "cancelled"];
  const byId = (id) => document.getElementById(id);
  const setText = (id, value) => { const n = byId(id); if (n) n.textContent = value ?? "–"; };
  let logTimer = null;
  let lastLogFetch = 0;

  function refreshLog() {
    const url = document.body.dataset.logUrl;
    if (!url) return;
    lastLogFetch = Date.now();
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : null))
      .then((body) => {
        if (!body) return;
        const log = byId("load-log");
        const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.textContent = body.lines.join("\n");
        const none = byId("load-log-empty");
        if (none) none.hidden = body.lines.length > 0;
        if (atBottom) log.scrollTop = log.scrollHeight;
      })
      .catch(() => {});
  }

  function scheduleLog(final) {
    // At most one log request a second while the job runs; one more at the end.
    if (final) { clearTimeout(logTimer); logTimer = null; refreshLog(); return; }
    if (logTimer) return;
    const wait = Math.max(0, 1000 - (Date.now() - lastLogFetch));
    logTimer = setTimeout(() => { logTimer = null; refreshLog(); }, wait);
  }

  function renderResult(data) {
    const section = byId("load-result");
    const ended = ENDED.includes(data.status);
    section.hidden = !ended;
    if (!ended) return;
    const result = data.result || {};
    setText("result-rows", result.rows);
    setText("result-bytes", result.bytes);
    setText("result-duration", result.duration_s);
    const error = byId("result-error");
    const message = data.status === "cancelled" ? "cancelled: the Spark job was stopped" : result.error;
    error.hidden = !message;
    error.textContent = message || "";
    const rows = document.querySelector("#result-partitions tbody");
    const partitions = result.partitions || {};
    rows.replaceChildren(...Object.keys(partitions).sort((a, b) => a - b).map((p) => {
      const range = partitions[p];
      const row = document.createElement("tr");
      row.dataset.partition = p;
      [p, range.start, range.end, range.end - range.start].forEach((value) => {
        const cell = document.createElement("td");
        cell.textContent = value;
        row.append(cell);
      });
      return row;
    }));
    if (!Object.keys(partitions).length) {
      const row = document.createElement("tr");
      row.className = "empty-state";
      const cell = document.createElement("td");
      cell.className = "empty-row";
      cell.colSpan = 4;
      cell.textContent = data.status === "succeeded" ? "no partition had records in the range"
        : "no partition was loaded";
      row.append(cell);
      rows.append(row);
    }
  }

  function render(data) {
    const status = byId("load-status");
    status.textContent = data.status;
    status.dataset.status = data.status;
    status.className = `load-${data.status}`;
    const percent = Math.floor((data.progress || 0) * 100 + 1e-9);
    byId("load-progress").value = percent;
    setText("progress-percent", `${percent} %`);
    setText("progress-detail", data.progress_text || "");
    const cancel = byId("cancel-form");
    if (cancel) cancel.hidden = ENDED.includes(data.status) || data.status === "cancelling";
    renderResult(data);
    scheduleLog(ENDED.includes(data.status));
  }

  // The loads list: a pushed load updates its row in place, or appears on top when new (on
  // the newest page only; older pages just keep their rows current).
  const percentOf = (data) => Math.floor((data.progress || 0) * 100 + 1e-9);
  const when = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "");

  // The shared long-id display (style.css .long-id): wraps, whole id on hover and in the text.
  function longId(value) {
    const node = document.createElement("span");
    node.className = "long-id";
    node.textContent = value ?? "";
    node.title = node.textContent;
    return node;
  }

  function cell(content, cls) {
    const node = document.createElement("td");
    if (content instanceof Node) node.append(content); else node.textContent = content ?? "";
    if (cls) node.className = cls;
    return node;
  }

  function renderRow(data) {
    const rows = document.querySelector("#loads tbody");
    let row = rows.querySelector(`tr[data-load="${data.id}"]`);
    if (!row) {
      if (document.body.dataset.olderPage === "true") return;
      const newer = [...rows.querySelectorAll("tr[data-load]")]
        .find((r) => Number(r.dataset.load) < data.id);
      row = document.createElement("tr");
      row.dataset.load = data.id;
      rows.querySelector("tr.empty, tr.empty-state")?.remove();
      rows.insertBefore(row, newer || null);
    }
    row.dataset.status = data.status;
    const link = document.createElement("a");
    link.href = `${location.pathname.replace(/\/$/, "")}/${data.id}/`;
    link.textContent = data.id;
    const path = document.createElement("code");
    path.className = "long-id";
    path.textContent = data.output;
    const bar = document.createElement("progress");
    bar.max = 100;
    bar.value = percentOf(data);
    const progress = cell(bar, "progress");
    progress.append(` ${percentOf(data)} %`);
    const detail = document.createElement("span");
    detail.className = "muted progress-detail";
    detail.textContent = data.progress_text ? ` ${data.progress_text}` : "";
    progress.append(detail);
    row.replaceChildren(cell(link), cell(data.direction_label), cell(longId(data.topic)), cell(path),
      cell(data.status, `load-${data.status}`), progress,
      cell((data.result || {}).rows, "rows"), cell(data.requested_by || ""),
      cell(when(data.created_ms)));
  }

  function renderAny(data) {
    if (byId("loads")) renderRow(data);
    else if (String(data.id) === document.body.dataset.load) render(data);
  }

  // The launch form shows the fields of the chosen kind of load (export or ingest) only.
  const form = byId("launch-load");
  if (form) {
    const showKind = () => {
      const kind = form.querySelector("input[name=kind]:checked")?.value || "export";
      form.querySelectorAll("fieldset[data-kind]").forEach((set) => {
        set.hidden = set.dataset.kind !== kind;
        set.disabled = set.hidden;
      });
    };
    form.querySelectorAll("input[name=kind]").forEach((r) => r.addEventListener("change", showKind));
    showKind();
  }

  window.SparkLoadPage = { render: renderAny };
  const initial = byId("load-initial");
  if (initial) render(JSON.parse(initial.textContent));
})();
