// Sortable tables: a header with data-sort ("text" or "number") sorts the rows shown by its
// column's data-value or text (empty values last), ascending then descending; aria-sort says which.
(function () {
  "use strict";
  document.querySelectorAll("table.sortable").forEach((table) => {
    const headers = Array.from(table.tHead.rows[0].cells);
    headers.forEach((header, column) => {
      const kind = header.dataset.sort;
      const button = header.querySelector("button");
      if (!kind || !button) return;
      button.addEventListener("click", () => {
        const ascending = header.getAttribute("aria-sort") !== "ascending";
        headers.forEach((h) => h.removeAttribute("aria-sort"));
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.from(body.rows).filter((r) => r.cells.length > column && !r.querySelector(".empty-row"));
        // data-value, else the text without thousands separators ("–" is no value).
        const value = (row) => {
          const cell = row.cells[column];
          if (cell.dataset.value !== undefined) return cell.dataset.value;
          const text = cell.textContent.trim();
          return text === "–" ? "" : kind === "number" ? text.replace(/,/g, "") : text;
        };
        rows.sort((a, b) => {
          const x = value(a), y = value(b);
          if (x === "" || y === "") return x === y ? 0 : x === "" ? 1 : -1;
          const order = kind === "number" ? Number(x) - Number(y) : x.localeCompare(y);
          return ascending ? order : -order;
        });
        body.append(...rows);
      });
    });
  });
})();
