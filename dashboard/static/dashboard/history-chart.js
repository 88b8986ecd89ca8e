// Throughput over time from the history the platform records (embedded in the page by
// dashboard/core/throughput.history_chart): every <div data-history-chart="ID"> draws the
// JSON of <script id="ID"> ({"unit": "bytes"|"records", "series": [{"label", "points"}]}),
// a time axis in the browser's zone and a rate axis labelled with its unit (KiB/s, MiB/s...).
(function () {
  "use strict";
  if (!window.uPlot) return;
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  const bytes = (v) => {
    let size = Math.abs(v), unit = 0;
    while (size >= 1024 && unit < UNITS.length - 1) { size /= 1024; unit += 1; }
    return `${+(Math.sign(v) * size).toFixed(size >= 100 || unit === 0 ? 0 : 1)} ${UNITS[unit]}/s`;
  };
  const records = (v) => (Math.abs(v) >= 1000 ? `${+(v / 1000).toFixed(1)}k` : `${+v.toFixed(1)}`);
  const COLOURS = ["#2d6cdf", "#d9822b", "#2a9d5c"];
  window.HistoryCharts = {};

  document.querySelectorAll("[data-history-chart]").forEach((target) => {
    const source = document.getElementById(target.dataset.historyChart);
    if (!source) return;
    const data = JSON.parse(source.textContent) || { series: [] };
    const isBytes = data.unit === "bytes";
    const format = isBytes ? bytes : (v) => `${records(v)} records/s`;
    // One time axis for all series: a round's samples share their timestamp.
    const xs = [...new Set(data.series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    const columns = data.series.map((s) => {
      const byTime = new Map(s.points.map((p) => [p[0], p[1]]));
      return xs.map((x) => (byTime.has(x) ? byTime.get(x) : null));
    });
    const width = () => Math.max(target.clientWidth - 16, 400);
    // The theme's colours (light or dark), not uPlot's black on the dark panel.
    const style = getComputedStyle(document.documentElement);
    const fg = style.getPropertyValue("--fg").trim() || "#1d2733";
    const line = style.getPropertyValue("--line").trim() || "#d7dee6";
    const axis = { stroke: fg, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    const chart = new uPlot(
      {
        width: width(),
        height: 220,
        scales: {
          x: { time: true },
          // At least 1 KiB/s or 1 record/s tall, so that small rates get distinct ticks.
          y: { range: (u, min, max) => [0, Math.max(max * 1.1, isBytes ? 1024 : 1)] },
        },
        series: [
          { label: "time" },
          ...data.series.map((s, i) => ({
            label: s.label, stroke: COLOURS[i % COLOURS.length], width: 2,
            value: (u, v) => (v === null || v === undefined ? "–" : format(v)),
          })),
        ],
        axes: [
          { ...axis, label: "time (your zone)", labelSize: 20 },
          { ...axis, label: isBytes ? "bytes/s" : "records/s", labelSize: 20, size: 80,
            values: (u, splits) => splits.map(isBytes ? bytes : records) },
        ],
      },
      [xs, ...columns],
      target,
    );
    // A single round spans the ten minutes up to it, not uPlot's years around it.
    if (xs.length === 1) chart.setScale("x", { min: xs[0] - 600, max: xs[0] + 30 });
    target.dataset.points = String(xs.length);
    target.dataset.axisColour = fg;
    if (!xs.length) {  // nothing recorded yet: a sentence instead of empty axes
      target.hidden = true;
      const note = document.createElement("p");
      note.className = "muted history-empty";
      note.textContent = `No ${isBytes ? "bytes" : "records"}/s recorded yet: beat's history task samples the brokers' counters every few seconds.`;
      target.after(note);
    }
    window.HistoryCharts[target.id] = chart;
    window.addEventListener("resize", () => chart.setSize({ width: width(), height: 220 }));
  });
})();
