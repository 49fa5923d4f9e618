// The explorer's page: every view is the state a path of moves names.
// The path lives in the location's hash (#p=3.0.5), so the browser's
// back and forward buttons walk it and a link shares it.
"use strict";

let run = null;

function pathFromHash() {
  const m = /^#p=([0-9.]*)$/.exec(location.hash);
  if (!m || m[1] === "") return [];
  return m[1].split(".").map(Number);
}

function hashOf(path) { return "#p=" + path.join("."); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function showError(text) {
  const e = document.getElementById("error");
  e.textContent = text;
  e.hidden = text === "";
}

async function fetchJSON(url) {
  const r = await fetch(url);
  const text = await r.text();
  if (!r.ok) throw new Error(text.trim());
  return JSON.parse(text);
}

function samePrefix(a, b, n) {
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function renderTrace(path) {
  const t = run.trace;
  const list = document.getElementById("trace");
  list.replaceChildren();
  if (!t) return;
  document.getElementById("trace-info").textContent =
    t.file + ": " + t.moves.length + " steps" + (t.violation ? ", records " + t.violation : "") +
    (t.loop_from > 0 ? ", loops back after step " + t.loop_from : "");
  t.moves.forEach((m, i) => {
    const li = el("li", { "data-step": String(i + 1), title: "go to the state after this step" }, m);
    if (t.violation && i === t.moves.length - 1 && !(t.loop_from > 0)) li.classList.add("bad");
    if (t.loop_from > 0 && i >= t.loop_from) li.classList.add("loop");
    if (path.length === i + 1 && samePrefix(path, t.path, i + 1)) li.classList.add("here");
    li.addEventListener("click", () => { location.hash = hashOf(t.path.slice(0, i + 1)); });
    list.append(li);
  });
}

function render(v) {
  const path = v.path || [];
  renderTrace(path);
  const steps = document.getElementById("steps");
  steps.replaceChildren();
  v.steps.forEach((s, i) => {
    const li = el("li", { "data-step": String(i + 1) }, s.move);
    if (s.violation) { li.classList.add("bad"); li.title = s.violation.invariant + ": " + s.violation.detail; }
    if (i === v.steps.length - 1) li.classList.add("here");
    li.addEventListener("click", () => { location.hash = hashOf(path.slice(0, i + 1)); });
    steps.append(li);
  });

  const badges = document.getElementById("badges");
  badges.replaceChildren();
  badges.append(el("span", { class: "badge" }, "step " + path.length));
  if (v.drained) badges.append(el("span", { class: "badge" }, "drained"));
  if (v.quiescent) badges.append(el("span", { class: "badge" }, "quiescent"));

  const viol = document.getElementById("violation");
  viol.replaceChildren();
  viol.hidden = !v.violation;
  if (v.violation) {
    viol.append(el("span", { class: "invariant" }, v.violation.invariant), " violated at step " + v.violation.step + ": ",
      el("span", { class: "detail" }, v.violation.detail));
  }

  const lines = document.getElementById("lines");
  lines.replaceChildren();
  v.lines.forEach((l, i) => {
    const li = el("li", {}, l);
    if (v.changed[i]) { li.classList.add("changed"); li.append(el("span", { class: "delta" }, "changed: " + v.changed[i])); }
    lines.append(li);
  });

  const body = document.querySelector("#verdicts tbody");
  body.replaceChildren();
  for (const vd of v.verdicts) {
    const cls = vd.verdict === "violated" ? "violated" : vd.verdict === "holds" ? "holds" : "unjudged";
    const tr = el("tr", { "data-invariant": vd.invariant }, el("td", {}, vd.invariant), el("td", { class: cls }, vd.verdict), el("td", {}, vd.detail || ""));
    body.append(tr);
  }

  const moves = document.getElementById("moves");
  moves.replaceChildren();
  if (v.moves.length === 0) moves.append("Nothing is enabled here.");
  const t = run.trace;
  const onTrace = t && path.length < t.path.length && samePrefix(path, t.path, path.length);
  for (const c of v.moves) {
    const b = el("button", { "data-index": String(c.index), "data-move": c.move }, c.move);
    for (const f of c.fired) b.append(el("span", { class: "fired" }, f));
    if (c.breaks) {
      b.classList.add("breaks");
      b.append(el("span", { class: "breaks-name" }, "breaks " + c.breaks.invariant));
      b.title = c.breaks.detail;
    }
    if (onTrace && t.path[path.length] === c.index) b.classList.add("trace-next");
    b.addEventListener("click", () => { location.hash = hashOf(path.concat([c.index])); });
    moves.append(b);
  }
  document.body.dataset.path = path.join(".");
}

async function load() {
  const path = pathFromHash();
  try {
    const v = await fetchJSON("api/state?path=" + path.join("."));
    showError("");
    render(v);
  } catch (e) {
    showError(String(e.message || e));
  }
  document.body.dataset.loaded = location.hash;
}

async function start() {
  try {
    run = await fetchJSON("api/run");
  } catch (e) {
    showError(String(e.message || e));
    return;
  }
  document.getElementById("run").textContent =
    run.title + ": run " + run.run + " (" + run.policy + ", engine " + run.engine + "), attempts " + run.attempts.join(" ");
  window.addEventListener("hashchange", load);
  load();
}

start();
