// What attend's pages (the translation page and the watch page) share: heat maps of attention, coloured as
// `attend heatmap` colours them, and the API's errors and how they are shown. Plain JavaScript, no framework.
"use strict";

const shared = (() => {
  // The colour scale of `attend heatmap` (Moreland's extended black body, reversed): white at 0, through yellow,
  // orange, red and purple, to black at 1, sampled every tenth.
  const STOPS = [[255, 255, 255], [251, 226, 125], [244, 192, 34], [253, 143, 51], [246, 96, 58], [226, 45, 60],
    [177, 0, 153], [73, 15, 206], [13, 23, 153], [25, 17, 74], [0, 0, 0]];

  function rgb(w) {
    const x = Math.min(Math.max(Number(w) || 0, 0), 1) * (STOPS.length - 1);
    const i = Math.min(Math.floor(x), STOPS.length - 2);
    const f = x - i;
    return STOPS[i].map((c, k) => Math.round(c + f * (STOPS[i + 1][k] - c)));
  }
  const css = (c) => `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
  // Dark backgrounds take white text.
  const isDark = (c) => 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] < 128;
  const fmt = (w) => Number(w).toFixed(2);

  // fill draws attention a ({source, output, weights}: weights[t][i] is how much output word t looked at source
  // word i) into table, a <table> with a <thead> and a <tbody>: a column per source word, a row per output word,
  // each cell in the colour of its weight, which its tooltip and screen readers give. Headers and cells carry
  // data-row and data-col.
  function fill(table, a) {
    const head = document.createElement("tr");
    head.append(document.createElement("td"));
    a.source.forEach((w, i) => {
      const th = document.createElement("th");
      th.scope = "col";
      th.dataset.col = i;
      const span = document.createElement("span");
      span.textContent = w;
      span.dir = "auto";
      th.append(span);
      head.append(th);
    });
    const rows = a.output.map((w, t) => {
      const row = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.dataset.row = t;
      th.textContent = w;
      th.dir = "auto";
      row.append(th);
      a.weights[t].forEach((x, i) => {
        const td = document.createElement("td");
        td.style.backgroundColor = css(rgb(x));
        td.dataset.row = t;
        td.dataset.col = i;
        td.title = `${w} → ${a.source[i]}: ${fmt(x)}`;
        const hidden = document.createElement("span");
        hidden.className = "visually-hidden";
        hidden.textContent = fmt(x);
        td.append(hidden);
        row.append(td);
      });
      return row;
    });
    table.tHead.replaceChildren(head);
    table.tBodies[0].replaceChildren(...rows);
  }

  // checked returns the API's answer res when it is a success, and else throws an Error with its message (the
  // JSON's "error", or the HTTP status).
  async function checked(res) {
    if (!res.ok) {
      let message = `${res.status} ${res.statusText}`;
      try {
        message = (await res.json()).error || message;
      } catch (_) { /* not JSON */ }
      throw new Error(message);
    }
    return res;
  }

  // showError shows message in the page's #error box, or hides the box when message is empty.
  function showError(message) {
    const box = document.getElementById("error");
    box.textContent = message;
    box.hidden = !message;
  }

  return { rgb, css, isDark, fmt, fill, checked, showError };
})();
