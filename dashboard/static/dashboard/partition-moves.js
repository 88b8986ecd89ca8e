// The topic page's operator actions: elect a partition's preferred leader, move its replicas,
// cancel a move. Each calls the REST admin (/api/v3, session + CSRF) and says what Kafka
// answered; the table itself changes through the live snapshots, never by reloading.
(function () {
  "use strict";
  const body = document.body;
  const cluster = encodeURIComponent(body.dataset.cluster);
  const topic = encodeURIComponent(body.dataset.topic);
  const result = document.getElementById("action-result");
  const form = document.getElementById("reassign");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const partitionUrl = (p) => `/api/v3/clusters/${cluster}/topics/${topic}/partitions/${p}`;

  function show(ok, message) {
    result.hidden = false;
    result.className = ok ? "ok" : "error";
    result.textContent = message;
  }

  async function call(method, url, payload) {
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: payload === undefined ? undefined : JSON.stringify(payload),
    });
    const answer = response.status === 204 ? {} : await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, answer };
  }

  function failure(what, { status, answer }) {
    const reason = answer.kafka_error ? `${answer.kafka_error}: ${answer.message}` : answer.message;
    const fields = answer.errors ? ` ${JSON.stringify(answer.errors)}` : "";
    return `${what} failed (${status}): ${reason || "no answer"}${fields}`;
  }

  async function elect(partition) {
    show(true, `Electing the preferred leader of partition ${partition}…`);
    const done = await call("POST", `${partitionUrl(partition)}:elect-leader`,
      { election_type: "PREFERRED" });
    if (done.ok) show(true, `Partition ${partition}: ${done.answer.result} (${done.answer.message})`);
    else show(false, failure(`Partition ${partition}: election`, done));
  }

  async function cancel(partition) {
    const done = await call("DELETE", `${partitionUrl(partition)}/reassignment`);
    if (done.ok) show(true, `Partition ${partition}: reassignment cancelled`);
    else show(false, failure(`Partition ${partition}: cancel`, done));
  }

  document.getElementById("partitions").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-partition]");
    if (!button) return;
    if (button.classList.contains("elect-preferred")) elect(button.dataset.partition);
    else if (button.classList.contains("cancel-reassignment")) cancel(button.dataset.partition);
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const partition = form.elements.partition.value;
    const replicas = form.elements.replicas.value.split(",").map((r) => Number(r.trim()));
    const done = await call("POST", `${partitionUrl(partition)}/reassignment`, { replicas });
    if (!done.ok) { show(false, failure(`Partition ${partition}: reassignment`, done)); return; }
    const adding = done.answer.adding_replicas;
    show(true, `Partition ${partition}: moving to ${done.answer.target_replicas.join(", ")}` +
      (adding.length ? ` (copying to ${adding.join(", ")})` : " (done)"));
  });
})();
