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
  // Readable numbers (as the templates' readable filters): thousands separators, IEC sizes.
  const num = (value) => (value === null || value === undefined || value === "" ? "–"
    : Number(value).toLocaleString("en-US"));
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  const bytes = (value) => {
    if (value === null || value === undefined) return "–";
    let size = Number(value), unit = 0;
    while (Math.abs(size) >= 1024 && unit < UNITS.length - 1) { size /= 1024; unit += 1; }
    if (unit === 0) return `${num(size)} B`;
    const digits = Math.abs(size) < 100 ? 1 : 0;
    return `${size.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })} ${UNITS[unit]}`;
  };
  const sizeNode = (node, value) => {
    node.textContent = bytes(value);
    node.dataset.bytes = value ?? "";
    node.title = value === null || value === undefined ? "" : `${num(value)} bytes`;
    return node;
  };
  const el = (tag, content, cls) => {
    const node = document.createElement(tag);
    if (content !== undefined) node.textContent = content;
    if (cls) node.className = cls;
    return node;
  };

  // A table with no rows says so (the same words as the server-rendered page).
  const emptyRow = (columns, words) => {
    const row = el("tr", undefined, "empty-state");
    const cell = el("td", words, "empty-row");
    cell.colSpan = columns;
    row.append(cell);
    return row;
  };

  // A long id (topic name, group id, client or member id) wraps inside its cell instead of
  // widening the table; the whole id stays in the text (copyable) and on hover.
  const longId = (value, tag) => {
    const node = el(tag || "span", value === null || value === undefined ? "" : String(value), "long-id");
    node.title = node.textContent;
    return node;
  };
  const idCell = (value) => { const cell = el("td"); cell.append(longId(value)); return cell; };

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
        row.dataset.broker = b.broker_id;
        const id = el("td");
        const link = el("a", b.broker_id, "broker-configs");
        link.href = `/clusters/${encodeURIComponent(data.cluster_id)}/brokers/${b.broker_id}/configs/`;
        link.title = `broker ${b.broker_id}'s configs`;
        const details = el("a", "details", "broker-page");
        details.href = `/clusters/${encodeURIComponent(data.cluster_id)}/brokers/${b.broker_id}/`;
        details.title = `broker ${b.broker_id}'s log dirs and partitions`;
        id.append(link, " ", details);
        row.append(id, el("td", b.address || ""), el("td", b.rack || ""),
          el("td", b.up ? "up" : "down", b.up ? "state up" : "state down"),
          el("td", text(b.admin_state), "admin"), el("td", b.is_controller ? "●" : ""));
        return row;
      }));
      if (!data.brokers.length) brokers.append(emptyRow(6, "no brokers registered in ZooKeeper: start a broker with this cluster's zookeeper.connect"));
    }
    renderPlatform(data.platform);
    const problems = document.querySelector("#problems tbody");
    if (problems && data.problem_partitions) {
      const cluster = data.cluster_id;
      problems.replaceChildren(...data.problem_partitions.map((p) => {
        const row = el("tr");
        row.dataset.partition = `${p.topic_name}:${p.partition_id}`;
        const topic = el("td");
        const link = longId(p.topic_name, "a");
        link.href = `/clusters/${encodeURIComponent(cluster)}/topics/${encodeURIComponent(p.topic_name)}/`;
        topic.append(link);
        row.append(topic, el("td", p.partition_id), el("td", p.leader ?? "none"),
          el("td", p.replicas.join(", ")), el("td", p.isr.join(", "), "isr"),
          el("td", p.state, "state"));
        return row;
      }));
      if (!data.problem_partitions.length) problems.append(emptyRow(6, "none: every partition has a leader and its full ISR"));
    }
    const topics = document.getElementById("topics");
    if (topics && data.topics) {
      const cluster = data.cluster_id;
      topics.replaceChildren(...data.topics.map((name) => {
        const item = el("li");
        const link = longId(name, "a");
        link.href = `/clusters/${encodeURIComponent(cluster)}/topics/${encodeURIComponent(name)}/`;
        item.append(link);
        return item;
      }));
      if (!data.topics.length) {
        topics.append(el("li", "No topics yet: create one on the Topics page, or let a producer create it (auto.create.topics.enable).", "empty-state empty-row"));
      }
    }
  }

  // The local platform's processes from `make run`'s supervisor; hidden when there is none.
  function renderPlatform(platform) {
    const section = document.getElementById("platform");
    if (!section || platform === undefined) return;
    section.hidden = !platform;
    if (!platform) return;
    setText("platform-updated", platform.updated_at);
    document.querySelector("#processes tbody").replaceChildren(...platform.processes.map((p) => {
      const row = el("tr");
      row.dataset.process = p.name;
      const state = p.restart_at ? `${p.state} (restart at ${p.restart_at})` : p.state;
      const lastExit = p.last_exit ? `${p.last_exit} at ${p.last_exit_at}` : "–";
      row.append(el("td", p.name), el("td", text(p.pid), "pid"),
        el("td", state, p.state === "running" ? "state up" : "state down"),
        el("td", p.restarts, "restarts"), el("td", lastExit, "last-exit"),
        el("td", text(p.started_at)));
      return row;
    }));
  }

  function reassignmentText(r) {
    if (!r) return "";
    let label = `to ${r.target_replicas.join(", ")}`;
    if (r.adding_replicas.length) label += `; adding ${r.adding_replicas.join(", ")}`;
    if (r.removing_replicas.length) label += `; removing ${r.removing_replicas.join(", ")}`;
    return label;
  }

  // Operators' buttons; partition-moves.js handles their clicks.
  function partitionActions(p) {
    const cell = el("td", undefined, "actions");
    const elect = el("button", "Elect preferred leader", "elect-preferred");
    elect.type = "button";
    elect.dataset.partition = p.partition_id;
    cell.append(elect);
    if (p.reassignment) {
      const cancel = el("button", "Cancel reassignment", "cancel-reassignment");
      cancel.type = "button";
      cancel.dataset.partition = p.partition_id;
      cell.append(" ", cancel);
    }
    return cell;
  }

  // A partition's open transactions (DescribeProducers): who holds the LSO back, from where.
  function openTransactions(open) {
    const cell = el("td", undefined, "open-txns");
    if (!open || !open.length) { cell.textContent = "–"; return cell; }
    open.forEach((t, i) => {
      const span = el("span", `producer ${t.producer_id} (epoch ${t.producer_epoch}) from offset ${num(t.first_offset)}`, "txn");
      span.dataset.producer = t.producer_id;
      if (i) cell.append("; ");
      cell.append(span);
    });
    return cell;
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
        const cls = "replica" + (r.is_leader ? " leader" : "") + (r.in_sync ? "" : " out") +
          (r.up ? "" : " down");
        const label = `${r.broker_id}: ${r.log_end_offset ?? "?"}` + (r.up ? "" : " (down)");
        const span = el("span", label, cls);
        span.dataset.broker = r.broker_id;
        leo.append(span, " ");
      });
      const state = p.offline ? "offline" : p.under_replicated ? "under-replicated" : "ok";
      const id = el("td");
      const link = el("a", p.partition_id);
      link.href = `${location.pathname}partitions/${p.partition_id}/segments/`;
      id.append(link);
      row.append(id, el("td", p.leader ?? "none", "leader"), el("td", p.leader_epoch),
        el("td", p.replicas.map((r) => r.broker_id).join(", "), "replicas"),
        el("td", p.isr.join(", "), "isr"), el("td", num(p.log_start_offset)),
        el("td", num(p.high_watermark), "hw"), el("td", num(p.last_stable_offset), "lso"), leo,
        sizeNode(el("td", undefined, "size"), p.size_bytes), el("td", state, "state"),
        openTransactions(p.open_transactions), el("td", reassignmentText(p.reassignment), "reassignment"));
      if (body.dataset.operate) row.append(partitionActions(p));
      return row;
    }));
    if (!data.partitions.length) rows.append(emptyRow(rows.closest("table").tHead.rows[0].cells.length, "no partitions: the topic's metadata has none (is it being deleted?)"));
  }

  const setText = (id, value) => {
    const node = document.getElementById(id);
    if (node) node.textContent = text(value);
  };

  function renderGroup(data) {
    showError(data.error);
    if (data.error) return;
    setText("group-state", data.state);
    setText("group-members", data.members);
    setText("total-lag", num(data.lag_summary.total_lag));
    setText("max-lag", num(data.lag_summary.max_lag));
    const rows = document.querySelector("#lags tbody");
    rows.replaceChildren(...data.lags.map((r) => {
      const row = el("tr");
      row.dataset.partition = `${r.topic_name}:${r.partition_id}`;
      row.append(idCell(r.topic_name), el("td", r.partition_id),
        el("td", num(r.current_offset), "committed"), el("td", num(r.log_end_offset), "hw"),
        el("td", num(r.lag), "lag"), idCell(r.consumer_id || ""), idCell(r.client_id || ""));
      return row;
    }));
    if (!data.lags.length) rows.append(emptyRow(7, "no committed offsets and no assigned partitions: they appear when a member of the group commits offsets or is assigned partitions"));
    const members = document.querySelector("#members tbody");
    members.replaceChildren(...data.member_list.map((m) => {
      const row = el("tr");
      row.append(idCell(m.consumer_id), idCell(m.instance_id || ""), idCell(m.client_id),
        el("td", m.client_host),
        idCell(m.assignments.map((a) => `${a.topic_name}-${a.partition_id}`).join(" ")));
      return row;
    }));
    if (!data.member_list.length) members.append(emptyRow(5, "no members: the group is inactive"));
    if (window.LagChart) window.LagChart.push(Date.now() / 1000, data.lag_summary.total_lag);
  }

  // A time with its zone and how long ago (or from now) it is: "2024-05-01 12:00:00 UTC (3 min ago)".
  const age = (ms) => {
    const seconds = Math.round((Date.now() - ms) / 1000), past = seconds >= 0;
    let left = Math.abs(seconds), words;
    if (left < 60) words = `${left} s`;
    else if (left < 3600) words = `${Math.floor(left / 60)} min`;
    else if (left < 86400) { left = Math.floor(left / 60); words = `${Math.floor(left / 60)} h ${left % 60} min`; }
    else words = `${Math.floor(left / 86400)} d ${Math.floor((left % 86400) / 3600)} h`;
    return past ? `${words} ago` : `in ${words}`;
  };
  const when = (ms) => (ms === null || ms === undefined || ms < 0 ? "–"
    : `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC (${age(ms)})`);

  function nextAction(s) {
    // What the broker will do to this segment next, as its admin API computed it.
    const parts = [];
    const r = s.retention;
    if (r) {
      if (r.deletable_now) parts.push(`retention deletes it (${r.reasons.join(", ")})`);
      else if (r.blocked_by) parts.push(`kept: ${r.blocked_by}`);
      else if (r.retention_ms && r.retention_ms.applies && r.retention_ms.eligible_at_ms)
        parts.push(`retention.ms at ${when(r.retention_ms.eligible_at_ms)}`);
      if (!r.deletable_now && r.retention_bytes && r.retention_bytes.applies)
        parts.push(`retention.bytes after ${r.retention_bytes.bytes_until_eligible} more bytes`);
    }
    if (s.compaction) parts.push(`compaction: ${s.compaction.section}`);
    if (s.is_active) parts.push("active");
    return parts.join("; ") || "kept";
  }

  function renderSegments(data) {
    showError(data.error);
    if (data.error || !data.segments) return;
    setText("segment-count", data.segments.length);
    setText("log-start", num(data.log_start_offset));
    setText("segments-hw", num(data.high_watermark));
    const logSize = document.getElementById("log-size");
    if (logSize) sizeNode(logSize, data.size_bytes);
    setText("cleanup-policy", data.cleanup_policy);
    const rows = document.querySelector("#segments tbody");
    rows.replaceChildren(...data.segments.map((s) => {
      const row = el("tr");
      row.dataset.base = s.base_offset;
      row.append(el("td", s.base_offset, "base"), el("td", text(s.last_offset), "last"),
        el("td", when(s.first_timestamp)), el("td", when(s.max_timestamp)),
        sizeNode(el("td", undefined, "size"), s.size_bytes), el("td", when(s.created_ms)), el("td", when(s.modified_ms)),
        el("td", nextAction(s), "next"));
      return row;
    }));
    if (!data.segments.length) rows.append(emptyRow(8, "no segments yet: the broker creates the first when the partition gets its first record"));
  }

  function renderRun(run) {
    const rows = document.querySelector("#runs tbody");
    if (!rows) return;
    let row = rows.querySelector(`tr[data-run="${run.id}"]`);
    if (!row) {
      const empty = rows.querySelector("tr.empty, tr.empty-state");  // "no runs yet"
      if (empty) empty.remove();
      row = el("tr");
      row.dataset.run = run.id;
      rows.prepend(row);
    }
    row.dataset.status = run.status;
    row.replaceChildren(el("td", run.id), el("td", run.action), el("td", run.topic || "all topics"),
      el("td", run.status, `run-${run.status}`), el("td", when(run.started_ms)),
      el("td", when(run.finished_ms)), el("td", run.summary || run.error || ""));
  }

  const initialSegments = document.getElementById("segments-initial");
  if (initialSegments) {
    const data = JSON.parse(initialSegments.textContent);
    if (data) renderSegments(data);
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
      else if (message.kind === "group") renderGroup(message.data);
      else if (message.kind === "segments") renderSegments(message.data);
      else if (message.kind === "run") renderRun(message.data);
      else if (message.kind === "spark_load" && window.SparkLoadPage) window.SparkLoadPage.render(message.data);
      if (window.Throughput) window.Throughput.render(message.kind, message.data);  // throughput.js
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
