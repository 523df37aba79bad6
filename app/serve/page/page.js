// attend serve's page: translate a sentence, draw its attention (shared.js), and light the words each word looked
// at. Plain JavaScript, no framework, nothing from the network but this server's API.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  const { rgb, css, isDark, fmt, showError } = shared;

  let info = null; // GET /v1/model
  let shown = null; // {text, result, settings} of the sentence on display

  async function post(path, body) {
    const res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return shared.checked(res);
  }

  const status = (message) => { $("status").textContent = message; };

  // settings are the search the switch chooses: greedy, or a beam with its n-best list.
  function settings() {
    if ($("search-greedy").checked) {
      return { beam: 1 };
    }
    const max = (info && info.limits.max_beam) || 32;
    let width = parseInt($("beam-width").value, 10);
    if (!(width >= 2)) width = 5;
    width = Math.min(width, max);
    $("beam-width").value = width;
    return { beam: width, n_best: Math.min(width, 5) };
  }
  const describe = (s) => (s.beam > 1 ? `beam search of width ${s.beam}` : "greedy search");

  async function loadModel() {
    try {
      const res = await fetch("/v1/model");
      info = await res.json();
      $("model-info").textContent = `Model ${info.checkpoint}, step ${info.step}: ${info.description}`;
      $("beam-width").max = info.limits.max_beam;
      if (info.defaults.beam > 1) {
        $("beam-width").value = info.defaults.beam;
      }
    } catch (e) {
      $("model-info").textContent = `Could not read the model's description: ${e.message}`;
    }
  }

  // ---- one sentence ----

  async function translate(event) {
    event.preventDefault();
    const text = $("text").value.trim();
    if (!text) {
      showError("Type a sentence first.");
      $("text").focus();
      return;
    }
    const s = settings();
    const button = $("translate");
    button.disabled = true;
    showError("");
    status(`Translating with ${describe(s)}…`);
    const start = performance.now();
    try {
      const res = await post("/v1/translate", Object.assign({ text, attention: true, alignments: true }, s));
      const body = await res.json();
      render(text, body.translations[0], s);
      status(`Translated with ${describe(s)} in ${Math.round(performance.now() - start)} ms.`);
    } catch (e) {
      status("");
      showError(e.message);
    } finally {
      button.disabled = false;
    }
  }

  function wordButton(word, kind, index) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "word";
    b.textContent = word;
    b.dataset.kind = kind;
    b.dataset.index = index;
    b.setAttribute("aria-describedby", "readout");
    return b;
  }

  // render shows a translated sentence: its words, the heat map, the n-best list.
  function render(text, result, s) {
    shown = { text, result, settings: s };
    const a = result.attention;
    const ended = a.output.length > 0 && a.output[a.output.length - 1] === "</s>";
    const outWords = ended ? a.output.slice(0, -1) : a.output;

    const tr = $("translation");
    tr.replaceChildren(...outWords.map((w, t) => wordButton(w, "out", t)));
    if (outWords.length === 0) tr.textContent = "(empty)";
    $("source").replaceChildren(...a.source.map((w, i) => wordButton(w, "src", i)));

    shared.fill($("heat"), a);

    const list = $("nbest");
    if (result.n_best && result.n_best.length > 0) {
      list.replaceChildren(...result.n_best.map((h) => {
        const li = document.createElement("li");
        const t = document.createElement("span");
        t.textContent = h.translation;
        t.dir = "auto";
        const score = document.createElement("span");
        score.className = "score";
        score.textContent = `score ${h.score.toFixed(3)}`;
        li.append(t, score);
        return li;
      }));
      $("nbest-section").hidden = false;
    } else {
      list.replaceChildren();
      $("nbest-section").hidden = true;
    }
    clearLight();
    $("result").hidden = false;
  }

  // ---- lighting words ----

  const defaultReadout = "Point at or focus a word to see its weights.";

  function paint(el, w) {
    if (w === undefined) {
      el.style.backgroundColor = "";
      el.classList.remove("lit-dark");
      return;
    }
    const c = rgb(w);
    el.style.backgroundColor = css(c);
    el.classList.toggle("lit-dark", isDark(c));
  }

  function clearLight() {
    document.querySelectorAll(".words .word").forEach((b) => {
      paint(b);
      b.classList.remove("active");
    });
    document.querySelectorAll("#heat .on, #heat .cross").forEach((el) => el.classList.remove("on", "cross"));
    $("readout").textContent = defaultReadout;
  }

  // top lists the largest weights with their words.
  function top(weights, words) {
    return weights
      .map((w, i) => ({ w, word: words[i] }))
      .sort((x, y) => y.w - x.w)
      .slice(0, 3)
      .filter((x, k) => k === 0 || x.w >= 0.01)
      .map((x) => `${x.word} ${fmt(x.w)}`)
      .join(", ");
  }

  // lightRow lights the source words output row t looked at.
  function lightRow(t, col) {
    if (!shown) return;
    const a = shown.result.attention;
    clearLight();
    const weights = a.weights[t];
    document.querySelectorAll("#source .word").forEach((b, i) => paint(b, weights[i]));
    const out = document.querySelector(`#translation .word[data-index="${t}"]`);
    if (out) out.classList.add("active");
    document.querySelectorAll(`#heat th[data-row="${t}"]`).forEach((el) => el.classList.add("on"));
    if (col !== undefined) {
      document.querySelectorAll(`#heat th[data-col="${col}"]`).forEach((el) => el.classList.add("on"));
      const cell = document.querySelector(`#heat td[data-row="${t}"][data-col="${col}"]`);
      if (cell) cell.classList.add("cross");
      $("readout").textContent = `“${a.output[t]}” looked at “${a.source[col]}” with weight ${fmt(weights[col])}.`;
      return;
    }
    $("readout").textContent = `“${a.output[t]}” looked at: ${top(weights, a.source)}.`;
  }

  // lightColumn lights the output words that looked at source word i.
  function lightColumn(i) {
    if (!shown) return;
    const a = shown.result.attention;
    clearLight();
    const column = a.weights.map((row) => row[i]);
    document.querySelectorAll("#translation .word").forEach((b, t) => paint(b, column[t]));
    const src = document.querySelector(`#source .word[data-index="${i}"]`);
    if (src) src.classList.add("active");
    document.querySelectorAll(`#heat th[data-col="${i}"]`).forEach((el) => el.classList.add("on"));
    $("readout").textContent = `“${a.source[i]}” was looked at by: ${top(column, a.output)}.`;
  }

  function onWord(event) {
    const b = event.target.closest(".word");
    if (!b) return;
    const i = Number(b.dataset.index);
    if (b.dataset.kind === "out") lightRow(i);
    else lightColumn(i);
  }

  function onCell(event) {
    const cell = event.target.closest("td[data-row]");
    if (cell) {
      lightRow(Number(cell.dataset.row), Number(cell.dataset.col));
      return;
    }
    const th = event.target.closest("th");
    if (th && th.dataset.row !== undefined) lightRow(Number(th.dataset.row));
    else if (th && th.dataset.col !== undefined) lightColumn(Number(th.dataset.col));
  }

  // Arrow keys move along a line of words, Up and Down between the lines, Escape clears.
  function onWordKey(event) {
    const b = event.target.closest(".word");
    if (!b) return;
    const line = [...b.parentElement.querySelectorAll(".word")];
    const at = line.indexOf(b);
    let next = null;
    if (event.key === "ArrowRight") next = line[at + 1];
    else if (event.key === "ArrowLeft") next = line[at - 1];
    else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const other = b.dataset.kind === "out" ? "#source" : "#translation";
      const words = [...document.querySelectorAll(`${other} .word`)];
      next = words[Math.min(at, words.length - 1)];
    } else if (event.key === "Escape") {
      clearLight();
      return;
    } else return;
    event.preventDefault();
    if (next) next.focus();
  }

  // ---- downloads ----

  async function download(event) {
    const b = event.target.closest("button[data-format]");
    if (!b || !shown) return;
    const format = b.dataset.format;
    showError("");
    status(`Drawing the ${format.toUpperCase()}…`);
    try {
      const res = await post("/v1/heatmap", Object.assign({ text: shown.text, format }, shown.settings));
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement("a");
      a.href = url;
      a.download = `attention.${format}`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      status(`Downloaded attention.${format}.`);
    } catch (e) {
      status("");
      showError(e.message);
    }
  }

  // ---- gallery ----

  let gallery = []; // {text, result, settings}
  const maxLines = 2000;

  async function translateAll(event) {
    event.preventDefault();
    let lines = $("lines").value.split(/\r?\n/).map((l) => l.trim()).filter((l) => l.length > 0);
    if (lines.length === 0) {
      showError("Paste some lines, or choose a text file, first.");
      $("lines").focus();
      return;
    }
    let note = "";
    if (lines.length > maxLines) {
      note = ` (the first ${maxLines} of ${lines.length})`;
      lines = lines.slice(0, maxLines);
    }
    const s = settings();
    const chunk = Math.min((info && info.limits.max_sentences) || 64, 64);
    const button = $("gallery-run");
    button.disabled = true;
    showError("");
    gallery = [];
    try {
      for (let i = 0; i < lines.length; i += chunk) {
        status(`Translated ${i} of ${lines.length} lines${note}…`);
        const texts = lines.slice(i, i + chunk);
        const res = await post("/v1/translate", Object.assign({ texts, attention: true }, s));
        const body = await res.json();
        body.translations.forEach((result, k) => gallery.push({ text: texts[k], result, settings: s }));
      }
      status(`Translated ${lines.length} lines${note} with ${describe(s)}.`);
    } catch (e) {
      status("");
      showError(e.message);
    } finally {
      button.disabled = false;
    }
    renderGallery();
  }

  function miniMap(a) {
    const cell = 8;
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, a.source.length) * cell;
    canvas.height = Math.max(1, a.output.length) * cell;
    const g = canvas.getContext("2d");
    a.weights.forEach((row, t) => row.forEach((w, i) => {
      g.fillStyle = css(rgb(w));
      g.fillRect(i * cell, t * cell, cell, cell);
    }));
    canvas.setAttribute("aria-hidden", "true");
    return canvas;
  }

  function renderGallery() {
    const order = $("sort").value;
    const sorted = gallery.slice().sort((x, y) => {
      const d = x.result.attention.entropy - y.result.attention.entropy;
      return order === "asc" ? d : -d;
    });
    $("gallery").replaceChildren(...sorted.map((e) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "card";
      const ent = document.createElement("span");
      ent.className = "entropy";
      ent.textContent = `entropy ${e.result.attention.entropy.toFixed(2)} nats`;
      const src = document.createElement("span");
      src.className = "src";
      src.dir = "auto";
      src.textContent = e.text;
      const out = document.createElement("span");
      out.className = "out";
      out.dir = "auto";
      out.textContent = e.result.translation;
      b.append(ent, src, out, miniMap(e.result.attention));
      b.addEventListener("click", () => {
        $("text").value = e.text;
        render(e.text, e.result, e.settings);
        status(`Showing a sentence of the gallery (${describe(e.settings)}).`);
        $("result-title").focus();
        $("result").scrollIntoView({ block: "start" });
      });
      li.append(b);
      return li;
    }));
    $("gallery-bar").hidden = gallery.length === 0;
  }

  function readFile() {
    const file = $("file").files[0];
    if (!file) return;
    if (file.size > 4 << 20) {
      showError(`${file.name} is over 4 MB; choose a shorter file.`);
      return;
    }
    const reader = new FileReader();
    reader.onload = () => {
      $("lines").value = reader.result;
      status(`Read ${file.name}: ${reader.result.split(/\r?\n/).filter((l) => l.trim()).length} lines. Press “Translate all”.`);
    };
    reader.onerror = () => showError(`Could not read ${file.name}.`);
    reader.readAsText(file);
  }

  // ---- wiring ----

  document.addEventListener("DOMContentLoaded", () => {
    $("result-title").tabIndex = -1;
    $("form").addEventListener("submit", translate);
    $("text").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        $("form").requestSubmit();
      }
    });
    for (const id of ["search-greedy", "search-beam"]) {
      $(id).addEventListener("change", () => {
        $("beam-width").disabled = $("search-greedy").checked;
        if (shown) $("form").requestSubmit();
      });
    }
    for (const id of ["translation", "source"]) {
      const line = $(id);
      line.addEventListener("pointerover", onWord);
      line.addEventListener("focusin", onWord);
      line.addEventListener("keydown", onWordKey);
      line.addEventListener("pointerleave", clearLight);
      line.addEventListener("focusout", (e) => {
        if (!e.relatedTarget || !e.relatedTarget.closest || !e.relatedTarget.closest(".words")) clearLight();
      });
    }
    $("heat").addEventListener("pointerover", onCell);
    $("heat").addEventListener("pointerleave", clearLight);
    document.querySelector(".downloads").addEventListener("click", download);
    $("gallery-form").addEventListener("submit", translateAll);
    $("sort").addEventListener("change", renderGallery);
    $("file").addEventListener("change", readFile);
    loadModel();
  });
})();
