// Lists kept current (topics, consumer groups): the page asks the server for its own rows
// again (the same search, order and page: ?rows=1) data-refresh-s seconds after the previous
// answer (never two requests at once, however slow the server), only while the tab is
// visible (a hidden tab asks again as soon as it is shown), and swaps the table's body; the
// header's pill says live, or why not.
(function () {
  const table = document.querySelector("table[data-refresh-s]");
  const status = document.getElementById("live-status");
  if (!table || !status) return;
  const every = Math.max(Number(table.dataset.refreshS) || 5, 1) * 1000;
  const setStatus = (state, text, title) => {
    status.dataset.state = state; status.textContent = text; status.title = title || "";
  };
  const url = new URL(location.href);
  url.searchParams.set("rows", "1");
  // A request hung on a dead connection must not stop the refreshes for good.
  const patience = Math.max(every * 6, 30000);
  let failures = 0;
  async function refresh() {
    try {
      const response = await fetch(url, {
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
        signal: AbortSignal.timeout(patience),
      });
      if (response.status === 403) { setStatus("denied", "not allowed"); return; }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = table.querySelector("tbody");
      const fresh = document.createElement("tbody");
      fresh.innerHTML = await response.text();
      body.replaceWith(fresh);
      failures = 0;
      setStatus("live", "live", `updated ${new Date().toLocaleTimeString()}`);
    } catch (error) {
      failures += 1;
      setStatus("offline", "reconnecting", String(error));
    }
  }
  let timer = null;
  let inFlight = false;
  async function tick() {
    timer = null;
    if (document.visibilityState === "hidden") return; // resumed by visibilitychange
    inFlight = true;
    try {
      await refresh();
    } finally {
      inFlight = false;
      timer = setTimeout(tick, every); // the next one only after this one finished
    }
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && !inFlight && timer === null) tick();
  });
  setStatus("connecting", "connecting");
  tick();
})();
