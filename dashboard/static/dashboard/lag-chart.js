// The consumer group's lag over time: recorded history (HistorySample rows, embedded in the
// page) followed by the live points of each snapshot. uPlot comes from npm (static/vendor/).
(function () {
  "use strict";
  const target = document.getElementById("lag-chart");
  const source = document.getElementById("lag-history");
  if (!target || !source || !window.uPlot) return;
  const MAX_POINTS = 5000;
  const history = JSON.parse(source.textContent) || [];
  const xs = history.map((p) => p[0]);
  const ys = history.map((p) => p[1]);
  const chart = new uPlot(
    {
      width: Math.max(target.clientWidth, 400),
      height: 220,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      series: [{}, { label: "total lag", stroke: "#2d6cdf", width: 2, fill: "rgba(45,108,223,0.08)" }],
      axes: [{}, { label: "records" }],
    },
    [xs, ys],
    target,
  );
  target.dataset.points = String(xs.length);
  window.LagChart = {
    push(seconds, lag) {
      if (lag === null || lag === undefined) return;
      xs.push(seconds);
      ys.push(lag);
      if (xs.length > MAX_POINTS) { xs.shift(); ys.shift(); }
      chart.setData([xs, ys]);
      target.dataset.points = String(xs.length);
      target.dataset.last = String(lag);
    },
  };
  window.addEventListener("resize", () => chart.setSize({ width: Math.max(target.clientWidth, 400), height: 220 }));
})();
