// attend's watch page: each run's curves as its metrics log gives them, and its watched sentences' attention at
// any of its validations, chosen with a slider (the latest until moved). Plain JavaScript, no framework; it
// reads this server's API every few seconds.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 3000;
  const SVG = "http://www.w3.org/2000/svg";

  // The curves, in the order drawn; valid marks the series with a point per validation, log those drawn on a
  // logarithmic scale (perplexity falls by orders of magnitude early, then by a few percent).
  const SERIES = [
    { key: "loss", label: "training loss (nats per token)", color: "#1f77b4" },
    { key: "valid_ppl", label: "validation perplexity (log scale)", color: "#d62728", valid: true, log: true },
    { key: "valid_bleu", label: "validation BLEU", color: "#9467bd", valid: true },
    { key: "valid_aer", label: "attention AER (lower is better)", color: "#ff7f0e", valid: true },
    { key: "tok_per_s", label: "training speed (target tokens/s)", color: "#2ca02c" },
  ];

  const runs = []; // per run: {n, el, info, index, follow, cache: Map(step → record promise), shown: the record drawn}

  const { showError } = shared;

  async function getJSON(path) {
    const res = await shared.checked(await fetch(path, { cache: "no-store" }));
    return res.json();
  }

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svgEl = (tag, attrs) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  };

  // short writes a value with three significant digits, or as an integer when it is large.
  const short = (v) => (Math.abs(v) >= 1000 ? Math.round(v).toString() : Number(v.toPrecision(3)).toString());

  // ---- curves ----

  // chart draws one series as an SVG line over the steps [x0, x1], with a dot per point for a validation series
  // and a line at the step mark.
  function chart(s, pts, x0, x1, mark) {
    const W = 360, H = 120, L = 46, R = 10, T = 8, B = 20;
    const lo = Math.min(...pts.map((p) => p[1])), hi = Math.max(...pts.map((p) => p[1]));
    const f = s.log && lo > 0 ? Math.log : (v) => v;
    let y0 = f(lo), y1 = f(hi);
    if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    const px = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const py = (y) => T + (1 - (f(y) - y0) / (y1 - y0)) * (H - T - B);
    const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "data-series": s.key });
    const last = pts[pts.length - 1];
    svg.append(svgEl("title"));
    svg.firstChild.textContent = `${s.label}: ${pts.length} points, last ${short(last[1])} at step ${last[0]}`;
    svg.append(svgEl("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "frame" }));
    const label = (x, y, text, anchor) => {
      const t = svgEl("text", { x, y, "text-anchor": anchor, class: "tick" });
      t.textContent = text;
      svg.append(t);
    };
    label(L - 4, T + 8, short(hi), "end");
    label(L - 4, H - B, short(lo), "end");
    label(L, H - 5, `step ${Math.round(x0)}`, "start");
    label(W - R, H - 5, `${Math.round(x1)}`, "end");
    if (mark !== undefined && s.valid) {
      svg.append(svgEl("line", { x1: px(mark), x2: px(mark), y1: T, y2: H - B, class: "mark" }));
    }
    svg.append(svgEl("polyline", {
      points: pts.map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(" "),
      fill: "none", stroke: s.color, "stroke-width": 1.5,
    }));
    if (s.valid) {
      for (const p of pts) {
        const c = svgEl("circle", { cx: px(p[0]).toFixed(1), cy: py(p[1]).toFixed(1), r: p[0] === mark ? 4 : 2.5, fill: s.color, class: "pt" });
        c.dataset.step = p[0];
        c.append(svgEl("title"));
        c.firstChild.textContent = `step ${p[0]}: ${short(p[1])}`;
        svg.append(c);
      }
    }
    return svg;
  }

  function drawCurves(run) {
    const c = run.info.curves;
    const all = SERIES.flatMap((s) => c[s.key] || []);
    const box = run.el.querySelector(".charts");
    if (all.length === 0) {
      box.replaceChildren(el("p", "hint", "No training steps logged yet."));
      return;
    }
    const x0 = Math.min(...all.map((p) => p[0])), x1 = Math.max(...all.map((p) => p[0]));
    const mark = run.info.steps[run.index];
    box.replaceChildren(...SERIES.filter((s) => (c[s.key] || []).length > 0).map((s) => {
      const fig = el("figure", "curve");
      const pts = c[s.key];
      fig.append(el("figcaption", "", `${s.label}: ${short(pts[pts.length - 1][1])}`), chart(s, pts, x0, x1, mark));
      return fig;
    }));
  }

  // ---- the watched sentences ----

  function record(run, step) {
    if (!run.cache.has(step)) {
      const p = getJSON(`/v1/watch/${run.n}/${step}`);
      p.catch(() => run.cache.delete(step)); // asked again next time
      run.cache.set(step, p);
    }
    return run.cache.get(step);
  }

  // heat draws one attention matrix of a sentence in a figure.
  function heat(caption, a) {
    const fig = el("figure", "map");
    fig.append(el("figcaption", "", caption));
    const scroll = el("div", "heat-scroll");
    scroll.tabIndex = 0;
    scroll.setAttribute("aria-label", `${caption}, scrollable`);
    const table = el("table", "heat");
    table.append(el("caption", "visually-hidden", `${caption}: each output token (rows) to each source token (columns)`));
    table.append(document.createElement("thead"), document.createElement("tbody"));
    shared.fill(table, a);
    scroll.append(table);
    fig.append(scroll);
    return fig;
  }

  const words = (ws) => ws.filter((w) => w !== "</s>").join(" ");

  function drawRecord(run, rec) {
    const box = run.el.querySelector(".sentences");
    box.replaceChildren(...rec.sentences.map((s) => {
      const art = el("article", "sentence");
      art.append(el("h3", "", `Validation line ${s.line}`));
      const dl = el("dl", "texts");
      for (const [term, text] of [["source", words(s.source)], ["output", words(s.output)], ["reference", words(s.reference || [])]]) {
        if (!text && term === "reference") continue;
        const dd = el("dd", term, text);
        dd.dir = "auto";
        dl.append(el("dt", "", term), dd);
      }
      art.append(dl);
      const maps = el("div", "maps");
      maps.append(heat("Attention", { source: s.source, output: s.output, weights: s.attention }));
      if (s.alignment) {
        maps.append(heat("Alignment attention", { source: s.source, output: s.output, weights: s.alignment }));
      }
      art.append(maps);
      return art;
    }));
    if (rec.sentences.length === 0) box.replaceChildren(el("p", "hint", "This validation watched no sentence."));
    box.dataset.step = rec.step;
  }

  // describe sums up a validation from its record.
  function describe(rec) {
    const parts = [`step ${rec.step}`, `epoch ${rec.epoch}`];
    if (rec.valid_ppl != null) parts.push(`perplexity ${short(rec.valid_ppl)}`);
    if (rec.valid_bleu != null) parts.push(`BLEU ${short(rec.valid_bleu)}`);
    if (rec.valid_aer != null) parts.push(`AER ${short(rec.valid_aer)}`);
    return parts.join(" · ");
  }

  async function showStep(run) {
    const steps = run.info.steps;
    const slider = run.el.querySelector("input[type=range]");
    const out = run.el.querySelector("output");
    if (steps.length === 0) {
      slider.disabled = true;
      out.textContent = "no validation yet";
      run.el.querySelector(".sentences").replaceChildren(el("p", "hint", "The watched sentences appear at the run's first validation."));
      return;
    }
    slider.disabled = false;
    slider.max = steps.length - 1;
    slider.value = run.index;
    const step = steps[run.index];
    const head = `validation ${run.index + 1} of ${steps.length}`;
    if (run.shown && run.shown.step === step) {
      out.textContent = `${head}: ${describe(run.shown)}`;
      return;
    }
    out.textContent = `${head}: step ${step}`;
    try {
      const rec = await record(run, step);
      if (run.info.steps[run.index] !== step) return; // the slider moved on meanwhile
      run.shown = rec;
      out.textContent = `${head}: ${describe(rec)}`;
      drawRecord(run, rec);
    } catch (e) {
      out.textContent = `${head}: step ${step} (${e.message})`;
    }
  }

  // ---- runs ----

  function newRun(n, info) {
    const sec = el("section", "run");
    sec.dataset.run = n;
    const title = el("h2", "", info.name);
    title.id = `run-${n}`;
    sec.setAttribute("aria-labelledby", title.id);
    const slider = document.createElement("input");
    slider.type = "range";
    slider.min = 0;
    slider.step = 1;
    slider.id = `slider-${n}`;
    const label = el("label", "", "Validation");
    label.htmlFor = slider.id;
    const out = document.createElement("output");
    out.htmlFor = slider.id;
    out.setAttribute("aria-live", "polite");
    const bar = el("div", "slider");
    bar.append(label, slider, out);
    const overview = el("div", "overview");
    overview.append(title, el("p", "summary"), el("p", "error"), el("div", "charts"));
    const validation = el("div", "validation");
    validation.append(bar,
      el("p", "hint", "Move the slider (or focus it and use the arrow keys) to see the attention at an earlier validation; at the right end it follows the latest."),
      el("div", "sentences"));
    sec.append(overview, validation);
    const run = { n, el: sec, info, index: 0, follow: true, cache: new Map(), shown: undefined };
    slider.addEventListener("input", () => {
      run.index = Number(slider.value);
      run.follow = run.index === run.info.steps.length - 1;
      drawCurves(run);
      showStep(run);
    });
    $("runs").append(sec);
    return run;
  }

  function update(run, info) {
    const old = run.info.steps;
    // A run that starts again (--overwrite) or resumes from an earlier step rewrites its records.
    if (info.steps.length < old.length || old.some((s, i) => info.steps[i] !== s)) {
      run.cache.clear();
      run.shown = undefined;
      run.follow = true;
    }
    run.info = info;
    if (run.follow || run.index >= info.steps.length) run.index = Math.max(info.steps.length - 1, 0);
    run.el.querySelector(".summary").textContent = info.title || "No training step logged yet.";
    const err = run.el.querySelector(".error");
    err.textContent = info.error || "";
    err.hidden = !info.error;
    drawCurves(run);
    showStep(run);
  }

  async function poll() {
    try {
      const list = await getJSON("/v1/watch");
      list.runs.forEach((info, n) => {
        if (!runs[n]) runs[n] = newRun(n, info);
        update(runs[n], info);
      });
      $("runs").classList.toggle("several", list.runs.length > 1);
      $("watch-info").textContent = `${list.runs.length === 1 ? "1 run" : `${list.runs.length} runs`}, read at ${new Date().toLocaleTimeString()}; the page reads them again every ${POLL_MS / 1000} s.`;
      showError("");
    } catch (e) {
      showError(`Could not read the runs: ${e.message}`);
    }
    setTimeout(poll, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", poll);
})();
