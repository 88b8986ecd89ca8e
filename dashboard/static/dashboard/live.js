// Keeps a live page current: one WebSocket to the dashboard (never to a broker), each
// message a full snapshot rendered in place. Reconnects with a backoff.
(function () {
  "use strict";
  const body = document.body;
  const path = body.dataset.ws;
  if (!path) return;
  const status = document.getElementById("live-status");
  const setStatus = (state, text) => { status.dataset.state = state; status.textContent = text; };
  const text = (value) => (value === null || value === undefined ? "–" : String(value));
  const el = (tag, content, cls) => {
    const node = document.createElement(tag);
    if (content !== undefined) node.textContent = content;
    if (cls) node.className = cls;
    return node;
  };

  function showError(message) {
    const error = document.getElementById("error");
    if (!error) return;
    error.hidden = !message;
    error.textContent = message || "";
  }

  function renderOverview(data) {
    showError(data.error);
    document.querySelectorAll("[data-bind]").forEach((node) => {
      if (data[node.dataset.bind] !== undefined) node.textContent = text(data[node.dataset.bind]);
    });
    const brokers = document.querySelector("#brokers tbody");
    if (brokers && data.brokers) {
      brokers.replaceChildren(...data.brokers.map((b) => {
        const row = el("tr");
        row.append(el("td", b.broker_id), el("td", b.address || ""), el("td", b.rack || ""),
          el("td", b.up ? "up" : "down", b.up ? "up" : "down"), el("td", b.is_controller ? "●" : ""));
        return row;
      }));
    }
    const topics = document.getElementById("topics");
    if (topics && data.topics) {
      const cluster = data.cluster_id;
      topics.replaceChildren(...data.topics.map((name) => {
        const item = el("li");
        const link = el("a", name);
        link.href = `/clusters/${encodeURIComponent(cluster)}/topics/${encodeURIComponent(name)}/`;
        item.append(link);
        return item;
      }));
    }
  }

  function renderTopic(data) {
    showError(data.error);
    const rows = document.querySelector("#partitions tbody");
    if (!rows || !data.partitions) return;
    rows.replaceChildren(...data.partitions.map((p) => {
      const row = el("tr");
      row.dataset.partition = p.partition_id;
      const leo = el("td", undefined, "leo");
      p.replicas.forEach((r) => {
        const cls = "replica" + (r.is_leader ? " leader" : "") + (r.in_sync ? "" : " out");
        leo.append(el("span", `${r.broker_id}: ${r.log_end_offset ?? "?"}`, cls), " ");
      });
      const state = p.offline ? "offline" : p.under_replicated ? "under-replicated" : "ok";
      row.append(el("td", p.partition_id), el("td", p.leader ?? "none"), el("td", p.leader_epoch),
        el("td", p.isr.join(", ")), el("td", text(p.log_start_offset)),
        el("td", text(p.high_watermark), "hw"), leo, el("td", p.size_bytes ?? "?"), el("td", state));
      return row;
    }));
  }

  let delay = 500;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}${path}`);
    socket.onopen = () => { delay = 500; setStatus("live", "live"); };
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.kind === "overview") renderOverview(message.data);
      else if (message.kind === "topic") renderTopic(message.data);
      body.dataset.updated = String(Date.now());
    };
    socket.onclose = (event) => {
      if (event.code === 4403) { setStatus("denied", "not allowed"); return; }
      setStatus("offline", "reconnecting");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  setStatus("offline", "connecting");
  connect();
})();
