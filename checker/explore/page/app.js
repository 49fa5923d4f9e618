// The explorer's page: every view is the state a path of moves names.
// The path lives in the location's hash (#p=3.0.5), so the browser's
// back and forward buttons walk it and a link shares it.
"use strict";

let run = null;
let tables = null; // the run's spec, for the machines' tables
let lastView = null; // the state shown, to redraw the diagrams' marks

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
  renderMachines(v);
  renderProperties(v);
  document.body.dataset.path = path.join(".");
}

// renderProperties shows each property's judgement of the state.
function renderProperties(v) {
  const section = document.getElementById("props-section");
  section.hidden = !v.properties;
  if (!v.properties) return;
  const body = document.querySelector("#properties tbody");
  body.replaceChildren();
  for (const p of v.properties) {
    let here = p.holds ? "holds" : "does not hold";
    if (p.handoff >= 0) here += " (h" + p.handoff + ")";
    if (p.error) here = "error: " + p.error;
    const bad = p.kind === "always" && (!p.holds || p.error);
    body.append(el("tr", { "data-property": p.name }, el("td", {}, p.name), el("td", {}, p.kind),
      el("td", { class: bad ? "violated" : p.holds ? "holds" : "unjudged" }, here), el("td", {}, p.expr)));
  }
}

// loadDiagrams puts each role's state diagram (SVG laid out by the
// server, nodes and edges with stable ids) into the page.
async function loadDiagrams() {
  for (const role of ["source", "destination"]) {
    const r = await fetch("api/diagram?role=" + role);
    const text = await r.text();
    if (!r.ok) throw new Error(text.trim());
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    document.getElementById("diagram-" + role).replaceChildren(document.importNode(doc.documentElement, true));
  }
}

// markDiagrams marks, in each role's diagram, the chosen handoff's state,
// the edges of the rows an enabled move would fire for it and of the rows
// the last move fired: the ids are ROLE-STATE and ROLE-rROW-FROM.
function markDiagrams(v) {
  const sel = document.getElementById("diagram-handoff");
  const want = sel.value === "" ? 0 : Number(sel.value);
  if (sel.options.length !== v.roles.length) {
    sel.replaceChildren(...v.roles.map(r => el("option", { value: String(r.handoff) }, "h" + r.handoff)));
    sel.value = String(Math.min(want, v.roles.length - 1));
  }
  const h = Number(sel.value);
  for (const role of ["source", "destination"]) {
    const box = document.getElementById("diagram-" + role);
    for (const e of box.querySelectorAll(".current, .next, .fired")) e.classList.remove("current", "next", "fired");
    const here = v.roles.find(r => r.handoff === h);
    if (!here) continue;
    const node = box.querySelector("#" + CSS.escape(role + "-" + here[role]));
    if (node) node.classList.add("current");
    const edge = (r, cls) => {
      if (r.role !== role || r.handoff !== h) return;
      const e = box.querySelector("#" + CSS.escape(role + "-r" + r.row + "-" + r.from));
      if (e) e.classList.add(cls);
    };
    for (const c of v.moves) for (const r of c.rows) edge(r, "next");
    for (const r of v.fired) edge(r, "fired");
  }
  document.body.dataset.diagram = v.path.join(".") + "/h" + h;
}

// renderMachines draws each role's table: the rows from a handoff's
// current state, the rows an enabled move would fire and the rows the
// last move fired, each marked.
function renderMachines(v) {
  lastView = v;
  markDiagrams(v);
  if (!tables) return;
  for (const role of ["source", "destination"]) {
    const current = new Set(v.roles.map(r => r[role]));
    const key = r => r.role === role ? r.row : -1;
    const next = new Set(v.moves.flatMap(c => c.rows.map(key)));
    const fired = new Set(v.fired.map(key));
    const body = document.querySelector("#machine-" + role + " tbody");
    body.replaceChildren();
    tables[role].rows.forEach((row, i) => {
      const n = i + 1;
      const tr = el("tr", { "data-row": String(n) },
        el("td", {}, String(n)), el("td", {}, row.from.join(", ")), el("td", {}, row.event),
        el("td", {}, (row.policies || []).join(", ")), el("td", {}, row.to || "(stay)"),
        // As machines/*.md writes them: a row without a move or an action
        // is an explicit ignore.
        el("td", {}, (row.actions || []).join(", ") || (row.to ? "(none)" : "(ignore)")));
      if (row.why) tr.title = row.why;
      if (row.from.some(st => current.has(st))) tr.classList.add("current");
      if (next.has(n)) tr.classList.add("next");
      if (fired.has(n)) tr.classList.add("fired");
      body.append(tr);
    });
  }
}

// search asks the server for the shortest continuation from the state
// shown to a violation, and offers it as a path to open.
async function search() {
  const box = document.getElementById("search-result");
  const path = pathFromHash();
  box.hidden = false;
  box.removeAttribute("data-done");
  box.textContent = "searching from step " + path.length + "...";
  try {
    const target = document.getElementById("target").value;
    const invariant = document.getElementById("invariant").value;
    const f = await fetchJSON("api/search?path=" + path.join(".") +
      (target ? "&target=" + encodeURIComponent(target) : "") + (invariant ? "&invariant=" + encodeURIComponent(invariant) : ""));
    box.replaceChildren();
    const blocked = () => (f.blocked || []).map(b => b.invariant + " on " + b.states + " states").join(", ");
    if (f.invariant && f.violation) {
      box.append(el("span", { class: "invariant" }, f.violation.invariant),
        " breaks " + (f.path.length - path.length) + " steps from here, with nothing broken before" +
        (f.also && f.also.length ? " (the same step also breaks " + f.also.join(", ") + ")" : "") +
        " (" + f.states + " states searched): ",
        el("a", { id: "search-open", href: hashOf(f.path) }, "open the path"));
    } else if (f.invariant) {
      box.append(el("span", { class: "invariant" }, f.invariant),
        (f.complete ? " cannot break from here" : " was not found breaking before the search was cut: " + (f.stopped || "bounded")) +
        " (" + f.states + " states" + (f.complete ? ", every one reachable" : "") + ")" +
        (f.blocked && f.blocked.length ? "; branches not followed because another invariant broke first: " + blocked() : "") + ".");
    } else if (f.violation && target && f.violation.invariant === target) {
      box.append(el("span", { class: "invariant" }, target),
        " holds " + (f.path.length - path.length) + " steps from here (" + f.states + " states searched): ",
        el("a", { id: "search-open", href: hashOf(f.path) }, "open the path"));
    } else if (f.violation) {
      box.append(el("span", { class: "invariant" }, f.violation.invariant),
        " is violated " + (f.path.length - path.length) + " steps from here (" + f.states + " states searched): ",
        el("a", { id: "search-open", href: hashOf(f.path) }, "open the path"));
    } else if (f.complete) {
      box.append("No violation is reachable from here (" + f.states + " states, every one reachable).");
    } else {
      box.append("No violation found, but the search was cut: " + (f.stopped || "bounded") + " (" + f.states + " states).");
    }
  } catch (e) {
    box.textContent = String(e.message || e);
  }
  box.dataset.done = "true";
}

async function load() {
  document.getElementById("search-result").hidden = true;
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

// Judged logs: a lane per process, the facts along the shared axis
// (time stamps, or the order the judge read them), each attempt in its
// colour, the rejected fact marked with the invariant it breaks, and the
// steps the judge supplied for the rejected attempt on a lane of their own.
const svgNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Attempts get colours in the order they first appear, from a palette
// without the red that marks a rejection.
const palette = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#2f4b7c", "#a05195"];
const colours = new Map();
function colour(attempt) {
  if (!colours.has(attempt)) colours.set(attempt, palette[colours.size % palette.length]);
  return colours.get(attempt);
}

// rejectedBy names what a rejection rests on: the invariant the fact
// breaks, the tables, or (mocker logs) a rule of the mocker's own books.
function rejectedBy(l) {
  if (l.rejection.invariant) return l.rejection.invariant;
  if (l.mocker && l.mocker.rejection_is_bookkeeping) return "the mocker's own bookkeeping";
  return "not allowed by the tables";
}

function renderLogs(l) {
  document.getElementById("states").hidden = true;
  document.getElementById("logs").hidden = false;
  document.getElementById("logs-verdict").textContent =
    l.files.join(", ") + " (" + l.policy + " on " + l.engine +
    (l.from === "mocker" ? ", the dynamo mocker's bookkeeping at its own lines" : "") + "): " + l.verdict;
  const books = document.getElementById("mocker-books");
  books.hidden = !l.mocker;
  if (l.mocker) {
    books.textContent = "mocker bookkeeping: " + l.mocker.handoffs + " handoffs; its in-flight counts differ from the contract's at " +
      l.mocker.in_flight_divergences + " events (it counts a prefill out when its pass completes, the contract while its source is held); its own rules are broken at " +
      l.mocker.bookkeeping_rejections + " events.";
  }
  const rej = document.getElementById("rejection");
  if (l.rejection) {
    const r = l.rejection;
    rej.hidden = false;
    rej.replaceChildren(el("span", { class: "invariant" }, rejectedBy(l)),
      " at " + r.file + ":" + r.line + ": " + r.fact + ": " + r.detail);
  }
  const W = 1300, left = 150, right = 30, laneH = 34, top = 24;
  const lanes = l.processes.map(p => p.name);
  const judgeLane = lanes.length;
  const nLanes = lanes.length + (l.explanation && l.explanation.length ? 1 : 0);
  let min = Infinity, max = -Infinity;
  for (const f of l.facts) { min = Math.min(min, f.at); max = Math.max(max, f.at); }
  if (!(max > min)) { max = min + 1; }
  const x = at => left + (at - min) / (max - min) * (W - left - right);
  const y = lane => top + lane * laneH;
  const root = svg("svg", { viewBox: "0 0 " + W + " " + (top + nLanes * laneH + 10), "data-axis": l.axis });
  const laneGroups = [];
  for (let i = 0; i < nLanes; i++) {
    const name = i < lanes.length ? lanes[i] : "judge (unlogged)";
    const g = svg("g", { "data-lane": name });
    g.append(svg("line", { class: "lane", x1: left, x2: W - right, y1: y(i), y2: y(i) }));
    g.append(svg("text", { class: "lane-label", x: 6, y: y(i) + 4 }, name));
    root.append(g);
    laneGroups.push(g);
  }
  root.append(svg("text", { class: "lane-label", x: left, y: 12 }, l.axis === "time" ? "time (µs) →" : "order read →"));
  const byWhere = new Map();
  for (const f of l.facts) {
    const c = svg("circle", { class: "fact" + (f.rejected ? " rejected" : ""), cx: x(f.at), cy: y(f.proc), r: f.rejected ? 8 : 5,
      fill: colour(f.attempt), "data-file": f.file, "data-line": String(f.line),
      "data-attempt": f.attempt || "", "data-kind": f.kind });
    c.append(svg("title", {}, f.file + ":" + f.line + " " + f.text));
    c.addEventListener("click", () => { document.getElementById("fact").textContent = f.file + ":" + f.line + " " + f.text; });
    if (f.rejected && l.rejection) {
      c.setAttribute("data-rejected", "true");
      c.setAttribute("data-invariant", l.rejection.invariant || "");
      laneGroups[f.proc].append(svg("text", { class: "rejected-label", x: x(f.at) + 10, y: y(f.proc) - 8 }, rejectedBy(l)));
    }
    laneGroups[f.proc].append(c);
    byWhere.set(f.file + ":" + f.line, f);
  }
  const list = document.getElementById("explanation");
  list.replaceChildren();
  if (l.explanation && l.explanation.length) {
    document.getElementById("explanation-title").hidden = false;
    // A supplied step sits between the logged steps around it.
    let prev = min, pending = [];
    const place = next => {
      pending.forEach((s, i) => {
        const at = prev + (next - prev) * (i + 1) / (pending.length + 1);
        const r = svg("rect", { class: "supplied", x: x(at) - 4, y: y(judgeLane) - 4, width: 8, height: 8, "data-step": s.text });
        r.append(svg("title", {}, "supplied by the judge: " + s.text));
        laneGroups[judgeLane].append(r);
      });
      pending = [];
    };
    for (const s of l.explanation) {
      list.append(el("li", { class: s.supplied ? "supplied" : "logged" }, s.supplied ? "unlogged (supplied by the judge): " + s.text : s.where + " " + s.text));
      if (s.supplied) { pending.push(s); continue; }
      const f = byWhere.get(s.where);
      const at = f ? f.at : prev;
      place(at);
      prev = at;
    }
    place(max);
  }
  document.getElementById("lanes").replaceChildren(root);
  if (l.rejection) {
    document.getElementById("furthest-title").hidden = false;
    const why = document.getElementById("furthest-why");
    why.hidden = !l.furthest_why;
    why.textContent = l.furthest_why || "";
    document.getElementById("furthest").replaceChildren(...(l.furthest || []).map(line => el("li", {}, line)));
  }
  document.body.dataset.loaded = "logs";
}

async function start() {
  try {
    run = await fetchJSON("api/run");
    if (run.logs) {
      document.getElementById("run").textContent = run.title;
      renderLogs(await fetchJSON("api/logs"));
      return;
    }
  } catch (e) {
    showError(String(e.message || e));
    return;
  }
  try {
    tables = await fetchJSON("api/spec");
    await loadDiagrams();
  } catch (e) {
    showError(String(e.message || e));
  }
  document.getElementById("diagram-handoff").addEventListener("change", () => { if (lastView) markDiagrams(lastView); });
  document.getElementById("run").textContent =
    run.title + ": run " + run.run + " (" + run.policy + ", engine " + run.engine + "), attempts " + run.attempts.join(" ");
  window.addEventListener("hashchange", load);
  document.getElementById("search").addEventListener("click", search);
  const inv = document.getElementById("invariant");
  for (const i of run.invariants) if (i.searchable) inv.append(el("option", { value: i.name }, "for " + i.name));
  if (run.targets && run.targets.length) {
    const sel = document.getElementById("target");
    for (const t of run.targets) sel.append(el("option", { value: t }, "for " + t));
    sel.hidden = false;
    // One search at a time: choosing one clears the other.
    sel.addEventListener("change", () => { if (sel.value) inv.value = ""; });
    inv.addEventListener("change", () => { if (inv.value) sel.value = ""; });
  }
  load();
}

start();
