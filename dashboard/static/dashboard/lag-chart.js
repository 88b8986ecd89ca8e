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
  const size = () => ({ width: Math.max(target.clientWidth, 400), height: 220 });
  const chart = new uPlot(
    {
      ...size(),
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      series: [{}, { label: "total lag", stroke: "#2d6cdf", width: 2, fill: "rgba(45,108,223,0.08)" }],
      axes: [{}, { label: "records" }],
    },
    [xs, ys],
    target,
  );
  // A single point spans the ten minutes up to it, not uPlot's years around it.
  const oneRound = () => {
    if (xs.length === 1) chart.setScale("x", { min: xs[0] - 600, max: xs[0] + 30 });
  };
  oneRound();
  // Before the first point: a sentence instead of empty axes, until a snapshot brings one.
  let note = null;
  const emptyState = () => {
    if (xs.length && note) {
      note.remove();
      note = null;
      target.hidden = false;
      chart.setSize(size());
    } else if (!xs.length && !note) {
      note = document.createElement("p");
      note.className = "muted history-empty";
      note.textContent = "No lag recorded yet: a point is added with every snapshot of the group.";
      target.hidden = true;
      target.after(note);
    }
  };
  emptyState();
  target.dataset.points = String(xs.length);
  window.LagChart = {
    push(seconds, lag) {
      if (lag === null || lag === undefined) return;
      xs.push(seconds);
      ys.push(lag);
      if (xs.length > MAX_POINTS) { xs.shift(); ys.shift(); }
      chart.setData([xs, ys]);
      emptyState();
      oneRound();
      target.dataset.points = String(xs.length);
      target.dataset.last = String(lag);
    },
  };
  window.addEventListener("resize", () => chart.setSize(size()));
})();
