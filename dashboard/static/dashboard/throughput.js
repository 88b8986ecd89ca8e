// Live throughput numbers (bytes in/out and records in per second, from the brokers' own
// counters, computed by the collector between two rounds) on the overview, broker and topic
// pages. live.js hands every snapshot to Throughput.render; elements say what they show:
//   data-rates-of="total" | "broker" (with data-broker) | "topic", holding
//   elements with data-rate="bytes_in_per_s" | "bytes_out_per_s" | "records_in_per_s"
//   (a broker's also "replication_bytes_in_per_s" | "replication_bytes_out_per_s").
(function () {
  "use strict";
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  const bytesPerSecond = (value) => {
    let size = Number(value), unit = 0;
    while (Math.abs(size) >= 1024 && unit < UNITS.length - 1) { size /= 1024; unit += 1; }
    const digits = unit === 0 || Math.abs(size) >= 100 ? 0 : 1;
    return `${size.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })} ${UNITS[unit]}/s`;
  };
  const recordsPerSecond = (value) => {
    const v = Number(value);
    const digits = v !== 0 && Math.abs(v) < 100 ? 1 : 0;
    return `${v.toLocaleString("en-US", { maximumFractionDigits: digits })} records/s`;
  };
  const format = (rate, value) => {
    if (value === null || value === undefined) return "–";
    return rate.includes("bytes") ? bytesPerSecond(value) : recordsPerSecond(value);
  };
  const RATES = ["bytes_in_per_s", "bytes_out_per_s", "records_in_per_s"];

  function fill(container, rates) {
    container.querySelectorAll("[data-rate]").forEach((node) => {
      const value = rates ? rates[node.dataset.rate] : null;
      node.textContent = format(node.dataset.rate, value);
      node.dataset.value = value === null || value === undefined ? "" : String(value);
    });
    container.dataset.measured = rates ? "1" : "0";
  }

  function brokerRows(table, brokers) {
    const body = table.querySelector("tbody");
    const ids = Object.keys(brokers).map(Number).sort((a, b) => a - b);
    if (!ids.length) return;  // the first round: keep the empty-state row
    body.replaceChildren(...ids.map((id) => {
      const row = document.createElement("tr");
      row.dataset.broker = String(id);
      const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; };
      row.append(cell(String(id)));
      RATES.forEach((rate) => {
        const td = cell(format(rate, brokers[id][rate]), "rate");
        td.dataset.rate = rate;
        td.dataset.value = String(brokers[id][rate]);
        row.append(td);
      });
      return row;
    }));
  }

  function render(kind, data) {
    if (!data) return;
    if (kind === "overview" && data.throughput) {
      const { brokers, total } = data.throughput;
      document.querySelectorAll('[data-rates-of="total"]').forEach((c) => fill(c, total));
      document.querySelectorAll('[data-rates-of="broker"]').forEach((c) => {
        fill(c, brokers[c.dataset.broker] || null);
      });
      const table = document.getElementById("broker-throughput");
      if (table) brokerRows(table, brokers);
    } else if (kind === "topic" && "throughput" in data) {
      document.querySelectorAll('[data-rates-of="topic"]').forEach((c) => fill(c, data.throughput));
    }
  }

  window.Throughput = { render, format };
})();
