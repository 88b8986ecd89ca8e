// Lists kept current (topics, consumer groups): the page asks the server for its own rows
// again (the same search, order and page: ?rows=1) every data-refresh-s seconds while it is
// visible, and swaps the table's body; the header's pill says live, or why not.
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
  let failures = 0;
  async function refresh() {
    if (document.hidden) return;
    try {
      const response = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
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
  setStatus("connecting", "connecting");
  refresh();
  setInterval(refresh, every);
})();
