// The message browser: renders the page's records (REST's shape: UTF-8 text as STRING,
// anything else as base64 BINARY) decoded as the user chooses, tails the topic over the
// WebSocket while asked to, and exports what is shown as JSON or CSV.
(function () {
  "use strict";
  const body = document.body;
  const records = JSON.parse(document.getElementById("records-data").textContent);
  const rows = document.querySelector("#records tbody");
  const empty = document.getElementById("records-empty");
  const decodeChoice = document.getElementById("decode");
  const zoneChoice = document.getElementById("time-zone");
  const MAX_ROWS = 2000; // a long tail drops its oldest rows

  // Bytes and their readings ----------------------------------------------------------------
  const utf8 = new TextEncoder();
  const textDecoder = new TextDecoder("utf-8", { fatal: false });
  const strictDecoder = new TextDecoder("utf-8", { fatal: true });

  function bytesOf(data) {
    if (!data) return null;
    if (data.type === "BINARY") return Uint8Array.from(atob(data.data), (c) => c.charCodeAt(0));
    return utf8.encode(data.data);
  }
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
  function utf8Text(bytes) {
    try { return strictDecoder.decode(bytes); } catch (e) { return null; }
  }
  function prettyJson(text) {
    const trimmed = text.trim();
    if (!trimmed || "{[\"-0123456789tfn".indexOf(trimmed[0]) < 0) return null;
    try { return JSON.stringify(JSON.parse(trimmed), null, 2); } catch (e) { return null; }
  }

  // {text, kind} of one key, value or header value as `choice` (auto, text, json, hex) says.
  function reading(bytes, choice) {
    if (bytes === null) return { text: "null", kind: "null" };
    const text = utf8Text(bytes);
    if (choice === "hex") return { text: hex(bytes), kind: "hex" };
    if (choice === "text") return { text: text ?? textDecoder.decode(bytes), kind: "text" };
    if (choice === "json") {
      const json = text === null ? null : prettyJson(text);
      return json === null ? { text: text ?? hex(bytes), kind: "not-json" } : { text: json, kind: "json" };
    }
    if (text === null) return { text: hex(bytes), kind: "hex" };
    const json = /^\s*[{[]/.test(text) ? prettyJson(text) : null;
    return json === null ? { text, kind: "text" } : { text: json, kind: "json" };
  }

  // Times --------------------------------------------------------------------------------------
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  function clock(ms) {
    if (ms === null || ms < 0) return "–";
    const d = new Date(ms);
    if (zoneChoice.value === "utc") {
      return `${d.toISOString().replace("T", " ").slice(0, 23)} UTC`;
    }
    const offset = -d.getTimezoneOffset();
    const sign = offset >= 0 ? "+" : "-";
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)} ` +
      `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)} (${zone})`;
  }
  function age(ms) {
    if (ms === null || ms < 0) return "";
    const s = Math.round((Date.now() - ms) / 1000);
    const ago = s < 0 ? "in the future" : "ago";
    const a = Math.abs(s);
    if (a < 60) return `${a} s ${ago}`;
    if (a < 3600) return `${Math.floor(a / 60)} min ${ago}`;
    if (a < 86400) return `${Math.floor(a / 3600)} h ${Math.floor((a % 3600) / 60)} min ${ago}`;
    return `${Math.floor(a / 86400)} d ${Math.floor((a % 86400) / 3600)} h ${ago}`;
  }

  // Rows ----------------------------------------------------------------------------------------
  const el = (tag, content, cls) => {
    const node = document.createElement(tag);
    if (content !== undefined) node.textContent = content;
    if (cls) node.className = cls;
    return node;
  };
  function cell(bytes, cls) {
    const shown = reading(bytes, decodeChoice.value);
    const td = el("td", undefined, cls);
    td.append(el("pre", shown.text, `data ${shown.kind}`));
    if (bytes !== null) td.title = `${bytes.length} bytes, shown as ${shown.kind}`;
    return td;
  }
  function headerCell(headers) {
    const td = el("td", undefined, "headers");
    headers.forEach((h) => {
      const bytes = h.value === null ? null : Uint8Array.from(atob(h.value), (c) => c.charCodeAt(0));
      const shown = reading(bytes, decodeChoice.value === "json" ? "auto" : decodeChoice.value);
      const line = el("div", undefined, "header");
      line.append(el("span", h.name, "name"), ": ", el("span", shown.text, shown.kind));
      td.append(line);
    });
    return td;
  }
  function row(r, fresh) {
    const tr = el("tr", undefined, fresh ? "new" : "");
    tr.dataset.partition = r.partition_id;
    tr.dataset.offset = r.offset;
    const when = el("td", undefined, "timestamp");
    when.append(el("span", clock(r.timestamp), "clock"), el("br"),
      el("span", age(r.timestamp), "age"));
    when.dataset.ms = r.timestamp;
    tr.append(el("td", r.partition_id, "partition"), el("td", r.offset, "offset"), when,
      cell(bytesOf(r.key), "key"), cell(bytesOf(r.value), "value"), headerCell(r.headers));
    return tr;
  }
  function renderAll() {
    rows.replaceChildren(...records.map((r) => row(r, false)));
    empty.hidden = records.length > 0;
  }
  function append(batch) {
    batch.forEach((r) => { records.push(r); rows.append(row(r, true)); });
    while (records.length > MAX_ROWS) { records.shift(); rows.firstElementChild.remove(); }
    empty.hidden = records.length > 0;
  }
  setInterval(() => {
    rows.querySelectorAll("td.timestamp").forEach((td) => {
      td.querySelector(".age").textContent = age(Number(td.dataset.ms));
    });
  }, 5000);

  // The decode choice belongs to the page: kept in its URL and in the links it leads to.
  decodeChoice.addEventListener("change", () => {
    const url = new URL(location.href);
    url.searchParams.set("format", decodeChoice.value);
    history.replaceState(null, "", url);
    document.querySelector("#browse input[name=format]").value = decodeChoice.value;
    const next = document.getElementById("next-page");
    if (next) {
      const link = new URL(next.href);
      link.searchParams.set("format", decodeChoice.value);
      next.href = link.toString();
    }
    const produce = document.getElementById("produce");
    if (produce) produce.action = url.pathname + url.search;
    renderAll();
  });
  zoneChoice.addEventListener("change", renderAll);

  // Start: show the offset or time field the chosen start needs.
  const start = document.getElementById("start");
  function showStartFields() {
    document.querySelectorAll("#browse [data-start]").forEach((label) => {
      label.hidden = label.dataset.start !== start.value;
    });
  }
  start.addEventListener("change", showStartFields);
  showStartFields();

  // Export what is shown ------------------------------------------------------------------
  function exported(r) {
    const field = (data) => {
      if (!data) return { text: null, encoding: null };
      return data.type === "STRING" ? { text: data.data, encoding: "utf-8" } : { text: data.data, encoding: "base64" };
    };
    const key = field(r.key);
    const value = field(r.value);
    return {
      partition: r.partition_id,
      offset: r.offset,
      timestamp: r.timestamp,
      timestamp_utc: r.timestamp >= 0 ? new Date(r.timestamp).toISOString() : null,
      key: key.text, key_encoding: key.encoding,
      value: value.text, value_encoding: value.encoding,
      headers: r.headers.map((h) => {
        const bytes = h.value === null ? null : Uint8Array.from(atob(h.value), (c) => c.charCodeAt(0));
        const text = bytes === null ? null : utf8Text(bytes);
        return text === null && bytes !== null
          ? { name: h.name, value: h.value, encoding: "base64" }
          : { name: h.name, value: text, encoding: bytes === null ? null : "utf-8" };
      }),
    };
  }
  const CSV_COLUMNS = ["partition", "offset", "timestamp", "timestamp_utc", "key", "key_encoding",
    "value", "value_encoding", "headers"];
  // OWASP's CSV injection advice: a text cell starting with = + - @, a tab or a carriage
  // return would be read by a spreadsheet as a formula, so it gets a leading ' (and quotes).
  const FORMULA_START = /^[=+\-@\t\r]/;
  function csvField(value) {
    if (value === null || value === undefined) return "";
    let text = typeof value === "string" ? value : JSON.stringify(value);
    if (typeof value !== "number" && FORMULA_START.test(text)) text = `'${text}`;
    return /[",\r\n']/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  }
  function download(name, type, content) {
    const link = el("a");
    link.href = URL.createObjectURL(new Blob([content], { type }));
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  }
  const fileBase = `${body.dataset.topic}-messages`;
  document.getElementById("export-json").addEventListener("click", () => {
    download(`${fileBase}.json`, "application/json",
      JSON.stringify(records.map(exported), null, 2) + "\n");
  });
  document.getElementById("export-csv").addEventListener("click", () => {
    const lines = [CSV_COLUMNS.join(",")];
    records.map(exported).forEach((r) => {
      lines.push(CSV_COLUMNS.map((c) => csvField(r[c])).join(","));
    });
    download(`${fileBase}.csv`, "text/csv", lines.join("\r\n") + "\r\n");
  });

  // Live tail: a WebSocket only while the button is on (the collector tails only then) ------
  const toggle = document.getElementById("tail-toggle");
  const tailStatus = document.getElementById("tail-status");
  const setTail = (state, text) => { tailStatus.dataset.state = state; tailStatus.textContent = text; };
  let socket = null;
  let delay = 500;
  let skipped = 0;
  function openTail() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}${body.dataset.tailWs}`);
    const mine = socket;
    setTail("connecting", "connecting");
    mine.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.kind !== "tail") return;
      const data = message.data;
      if (data.error) { setTail("error", `tail: ${data.error}`); return; }
      delay = 500;
      skipped += data.skipped || 0;
      setTail("live", skipped ? `tailing (${skipped} records skipped to keep up)` : "tailing");
      if (data.records.length) append(data.records);
      body.dataset.updated = String(Date.now());
    };
    mine.onclose = (event) => {
      if (socket !== mine) return; // turned off
      if (event.code === 4403) { setTail("denied", "not allowed"); socket = null; return; }
      if (event.code === 4400) { setTail("error", "tail: the filters are not valid"); socket = null; return; }
      setTail("connecting", "reconnecting");
      setTimeout(() => { if (socket === mine) openTail(); }, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  toggle.addEventListener("click", () => {
    const on = toggle.getAttribute("aria-pressed") !== "true";
    toggle.setAttribute("aria-pressed", String(on));
    toggle.textContent = on ? "Stop tail" : "Live tail";
    if (on) { openTail(); return; }
    const closing = socket;
    socket = null;
    if (closing) closing.close();
    setTail("off", "tail off");
  });

  renderAll();
  // A produce error is shown beside the form it belongs to: bring both into view.
  const produceError = document.getElementById("produce-error");
  if (produceError && !produceError.hidden) document.getElementById("produce").scrollIntoView();
})();
