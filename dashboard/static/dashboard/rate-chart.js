// A topic's records per second over time, from the history the platform records (embedded
// in the page): a time axis in the browser's zone and a rate axis labelled with its unit.
(function () {
  "use strict";
  const target = document.getElementById("throughput-chart");
  const source = document.getElementById("throughput-history");
  if (!target || !source || !window.uPlot) return;
  const history = JSON.parse(source.textContent) || [];
  const xs = history.map((p) => p[0]);
  const ys = history.map((p) => p[1]);
  const rate = (v) => (v >= 1000 ? `${(v / 1000).toFixed(1)}k` : `${+v.toFixed(1)}`);
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
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max * 1.1, 1)] } },
      series: [
        { label: "time" },
        { label: "records/s", stroke: "#2d6cdf", width: 2, fill: "rgba(45,108,223,0.08)",
          value: (u, v) => (v === null || v === undefined ? "–" : `${rate(v)} records/s`) },
      ],
      axes: [
        { ...axis, label: "time (your zone)", labelSize: 20 },
        { ...axis, label: "records/s", labelSize: 20, size: 60, values: (u, splits) => splits.map(rate) },
      ],
    },
    [xs, ys],
    target,
  );
  // A single round spans the ten minutes up to it, not uPlot's years around it.
  if (xs.length === 1) chart.setScale("x", { min: xs[0] - 600, max: xs[0] + 30 });
  target.dataset.points = String(xs.length);
  window.RateChart = chart;
  window.addEventListener("resize", () => chart.setSize({ width: width(), height: 220 }));
})();
