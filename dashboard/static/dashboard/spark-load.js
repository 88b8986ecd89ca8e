// A Spark load's page: live.js delivers the load's state (pushed by its Celery task over
// Channels); this renders status, progress bar, result and cancel button in place, and
// refreshes the log tail from the dashboard's API (never from the worker or Spark).
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
  }

  function render(data) {
    const status = byId("load-status");
    status.textContent = data.status;
    status.dataset.status = data.status;
    status.className = `load-${data.status}`;
    const percent = Math.floor((data.progress || 0) * 100 + 1e-9);
    byId("load-progress").value = percent;
    setText("progress-percent", `${percent} %`);
    setText("progress-tasks", `${data.tasks_done} / ${data.tasks_total} Spark tasks`);
    const cancel = byId("cancel-form");
    if (cancel) cancel.hidden = ENDED.includes(data.status) || data.status === "cancelling";
    renderResult(data);
    scheduleLog(ENDED.includes(data.status));
  }

  window.SparkLoadPage = { render };
  const initial = byId("load-initial");
  if (initial) render(JSON.parse(initial.textContent));
})();
