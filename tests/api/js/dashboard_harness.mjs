// Runs the dashboard's scripts in Node against a live API, with just enough of a DOM to see
// what the page shows. Prints one JSON object: what the page showed after each step of the
// scenario.
//   node dashboard_harness.mjs <api base url> <path to index.html> [scenario] [token]
// The scripts are those index.html loads, in its order; SHARED_STATIC_DIR in the environment is
// the folder behind static/shared/. With --calls, the pure functions of
// logic.js (and of the other pure files named, such as zone_rules.js) answer calls, one a line:
// {"function": name, "args": [...]} on stdin, the JSON result (or {"error": message}) on stdout:
//   node dashboard_harness.mjs --calls <path to logic.js> [<path to zone_rules.js> ...]
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import vm from "node:vm";

if (process.argv[2] === "--calls") {
  const sandbox = { encodeURIComponent, Date };
  sandbox.globalThis = sandbox;
  const context = vm.createContext(sandbox);
  for (const file of process.argv.slice(3)) vm.runInContext(readFileSync(file, "utf8"), context, { filename: path.basename(file) });
  // Each pure file publishes its functions as one globalThis.Edge* object.
  const functions = Object.assign({}, ...Object.keys(sandbox).filter((name) => name.startsWith("Edge")).map((name) => sandbox[name]));
  for await (const line of readline.createInterface({ input: process.stdin })) {
    let answer;
    try {
      const call = JSON.parse(line);
      const result = functions[call.function](...call.args);
      answer = { result: result === undefined ? null : result };
    } catch (err) {
      answer = { error: String(err) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  process.exit(0);
}

const [, , base, indexPath, scenario = "live_view", token] = process.argv;
const realFetch = globalThis.fetch;

class Element {
  constructor(tag) {
    this.tag = tag;
    this.parent = null;
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.listeners = {};
    this.hidden = false;
    this.disabled = false;
    this.textContent = "";
    this.className = "";
    this.value = "";
    this.checked = false;
    this.colSpan = 1;
    this.open = false;
    this.rect = { left: 0, top: 0, width: 0, height: 0 };
  }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
  dispatch(type, fields = {}) { for (const f of this.listeners[type] || []) f(Object.assign({ preventDefault() {} }, fields)); }
  adopt(nodes) {
    for (const node of nodes) if (node instanceof Element) node.parent = this;
  }
  append(...nodes) { this.adopt(nodes); this.children.push(...nodes); }
  replaceChildren(...nodes) { this.adopt(nodes); this.children = nodes; }
  remove() {
    if (this.parent) this.parent.children = this.parent.children.filter((node) => node !== this);
    this.parent = null;
  }
  get classList() {
    const names = () => this.className.split(/\s+/).filter(Boolean);
    return {
      contains: (name) => names().includes(name),
      add: (name) => { if (!names().includes(name)) this.className = names().concat(name).join(" "); },
      remove: (name) => { this.className = names().filter((n) => n !== name).join(" "); },
      toggle: (name, on) => { if (on ?? !names().includes(name)) this.classList.add(name); else this.classList.remove(name); },
    };
  }
  get firstChild() { return this.children[0] || null; }
  scrollIntoView() {}
  getBoundingClientRect() { return this.rect; }
  showModal() { this.open = true; }
  close() { this.open = false; this.dispatch("close"); }
  focus() {}
  pause() {}
  load() {}
  play() { return Promise.resolve(); }
  getAttribute(name) { return name in this.attributes ? this.attributes[name] : null; }
  setAttribute(name, value) { this.attributes[name] = String(value); }
  removeAttribute(name) { delete this.attributes[name]; }
  get src() { return this.getAttribute("src") || ""; }
  set src(value) { this.setAttribute("src", value); }
}

const byId = new Map();
const documentListeners = {};
const document = {
  hidden: false,
  getElementById(id) {
    if (!byId.has(id)) byId.set(id, new Element("#" + id));
    return byId.get(id);
  },
  createElement: (tag) => new Element(tag),
  createElementNS: (namespace, tag) => new Element(tag),
  body: new Element("body"),
  querySelectorAll: () => [],  // the sections' cards: this harness shows every element
  addEventListener(type, listener) { (documentListeners[type] ||= []).push(listener); },
};
const $ = (id) => document.getElementById(id);
const storage = new Map();
if (token) storage.set("edge-app.api-token", token);  // as if entered on the login form earlier
const requested = [];  // every path the page fetched, in order
const sent = [];  // the JSON bodies the page sent, with their requests
const confirmations = [];  // what window.confirm asked
let confirmAnswer = true;
const context = {
  document,
  window: {
    addEventListener() {},
    scrollTo() {},
    confirm(question) { confirmations.push(question); return confirmAnswer; },
  },
  sessionStorage: {
    getItem: (k) => (storage.has(k) ? storage.get(k) : null),
    setItem: (k, v) => storage.set(k, String(v)),
    removeItem: (k) => storage.delete(k),
  },
  fetch: (path, options = {}) => {
    const request = (options.method && options.method !== "GET" ? options.method + " " : "") + String(path);
    requested.push(request);
    if (options.body) sent.push({ request, body: JSON.parse(options.body) });
    return realFetch(new URL(path, base + "/"), options);
  },
  // Never on screen: the live grid's tiles fetch nothing here, so the counts of the live view's
  // requests stay its own.
  IntersectionObserver: class { observe() {} unobserve() {} },
  location: { hash: "" },
  URLSearchParams, URL, setTimeout, clearTimeout, console, encodeURIComponent, Promise, Error, JSON, Object, Math, Date, String,
  Array, Number,
};
context.globalThis = context;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Waits until `condition()` holds, for at most `timeout_ms` (a loaded machine is slow).
async function until(condition, timeout_ms = 15000) {
  const deadline = Date.now() + timeout_ms;
  while (!condition() && Date.now() < deadline) await sleep(50);
}
const liveSrc = () => $("live").getAttribute("src");
const snapshotFetches = () => requested.filter((path) => path.includes("/snapshot.jpg")).length;

function clickView(cameraId) {
  for (const row of $("cameras").children) {
    if (row.children[0] && row.children[0].textContent === cameraId) {
      const button = row.children[row.children.length - 1].children[0];
      button.dispatch("click");
      return;
    }
  }
  throw new Error("no row for camera " + cameraId);
}

function setHidden(hidden) {
  document.hidden = hidden;
  for (const f of documentListeners.visibilitychange || []) f();
}

// What the live view shows: the picture's frame, the table's frame, its caption and the note.
function liveView() {
  return {
    src: liveSrc(),
    picture_frame: $("live").dataset.frame || null,
    table_frame: $("detections").dataset.frame || null,
    table_rows: $("detections").children.length,
    meta: $("detections-meta").textContent,
    note: $("live-note").hidden ? null : $("live-note").textContent,
  };
}

// The text a node shows, children included.
function text(node) {
  if (typeof node === "string") return node;
  return node.children.length ? node.children.map(text).join("") : String(node.textContent ?? "");
}

function options(id) {
  return $(id).children.map((option) => option.value);
}

function click(node, fields) { node.dispatch("click", fields); }

function choose(id, value) {
  $(id).value = value;
  $(id).dispatch("change");
}

function type(id, value) {
  $(id).value = value;
  $(id).dispatch("input");
}

const link = () => $("link").textContent;

function eventsView() {
  return {
    events: $("events-list").children.map((card) => {
      const [thumb, info] = card.children;
      return {
        id: card.dataset.eventId,
        className: card.className,
        thumb: thumb.className === "thumb" ? thumb.src.split(":")[0] : null,
        text: text(info),
      };
    }),
    empty_note_hidden: $("events-empty").hidden,
    count: $("events-count").textContent,
    more_hidden: $("events-more").hidden,
    clip_count: $("rec-clip-count").textContent,
    error: $("events-error").textContent,
    cameras: options("event-camera"),
    labels: options("event-label"),
    zones: options("event-zone"),
    link: link(),
  };
}

function findEvent(id) {
  const card = $("events-list").children.find((node) => node.dataset.eventId === id);
  if (!card) throw new Error("no card for event " + id);
  return { thumb: card.children[0], remove: card.children[2] };
}

function countsView() {
  const rows = (id) => $(id).children.map((tr) => ({
    data: Object.assign({}, tr.dataset),
    cells: Object.fromEntries(tr.children.filter((td) => td.className).map((td) => [td.className.split(" ").pop(), td.textContent])),
  }));
  return { cameras: rows("counts-cameras"), zones: rows("counts-zones"), lines: rows("counts-lines"),
    zoneFigures: rows("zone-figures"), link: link() };
}

// Every shape of an SVG with a data-zone, data-line or data-drawing attribute.
function shapes(svg) {
  const found = [];
  const walk = (node) => {
    if (typeof node === "string") return;
    const marks = Object.keys(node.attributes).filter((name) => name.startsWith("data-"));
    if (marks.length) found.push(Object.assign({ tag: node.tag }, node.attributes));
    node.children.forEach(walk);
  };
  svg.children.forEach(walk);
  return found;
}

function editorView() {
  return {
    errors: $("editor-errors").children.map(text),
    result: $("editor-result").textContent,
    areas: $("editor-areas").children.map((li) => li.dataset.area),
    drawing: shapes($("editor-canvas")),
    viewBox: $("editor-canvas").getAttribute("viewBox"),
    picture: ($("editor-snapshot").getAttribute("src") || "").split(":")[0],
    link: link(),
  };
}

function cameraForm() {
  return {
    camera: $("edit-camera").value,
    cameras: options("edit-camera"),
    source: $("edit-source").value,
    fps_limit: $("edit-fps_limit").value,
    enabled: $("edit-enabled").checked,
    detect: $("edit-detect").checked,
    decoder: $("edit-decoder").value,
    errors: $("edit-errors").children.map(text),
    result: $("edit-result").textContent,
    link: link(),
  };
}

// A click on the editor's canvas at a normalised point of its on-screen box.
function clickCanvas(x, y) {
  const rect = $("editor-canvas").rect;
  click($("editor-canvas"), { clientX: rect.left + x * rect.width, clientY: rect.top + y * rect.height });
}

const scenarios = {
  async live_view(steps) {
    await sleep(1500);
    steps.after_load = { src: liveSrc(), snapshot_fetches: snapshotFetches() };
    clickView("back");
    await sleep(2500);
    steps.after_picking_a_camera_without_frames = Object.assign(liveView(), { snapshot_fetches: snapshotFetches() });
    clickView("front");
    await sleep(1200);
    steps.after_picking_a_camera_with_frames = liveView();
    const countFetches = () => requested.filter((path) => path === "api/v1/counts").length;
    setHidden(true);
    const countsAt = countFetches();
    await sleep(800);  // a tick in flight may still land
    const hiddenAt = snapshotFetches();
    await sleep(1500);
    steps.fetches_while_hidden = snapshotFetches() - hiddenAt;
    steps.counts_fetches_while_hidden = countFetches() - countsAt;
    steps.status_fetches = requested.filter((path) => path === "api/v1/status").length;
    setHidden(false);
    await sleep(1200);
    steps.fetches_after_showing_again = snapshotFetches() - hiddenAt;
    steps.after_showing_the_page_again = liveView();
    steps.requested = [...new Set(requested)];
  },
  async single_camera(steps) {
    await until(() => $("detections").dataset.frame);
    steps.after_load = Object.assign(liveView(), { name: $("live-name").textContent });
  },
  async status_facts(steps) {
    await until(() => $("status").children.length > 0);
    steps.facts = $("status").children.map(text);
  },
  async badge(steps) {
    await sleep(1500);
    steps.link = { text: $("link").textContent, className: $("link").className };
  },
  async events(steps) {
    const cards = () => $("events-list").children;
    await until(() => cards().length === 3 && cards().every((card) => card.children[0].src));
    steps.after_load = eventsView();
    choose("event-label", "car");
    await until(() => cards().length === 1);
    steps.filtered = eventsView();
    steps.filtered.query = requested.filter((p) => p.startsWith("api/v1/events?") && !p.includes("has_clip")).pop();
    choose("event-label", "");
    await until(() => cards().length === 3);
    const first = steps.after_load.events[0].id;
    click(findEvent(first).thumb);
    steps.viewer = { open: $("event-viewer").open, src: ($("event-full").getAttribute("src") || "").split(":")[0],
      caption: $("event-caption").textContent };
    click($("event-viewer-close"));
    steps.viewer_closed = { open: $("event-viewer").open, src: $("event-full").getAttribute("src") };
    confirmAnswer = false;
    click(findEvent(first).remove);
    await sleep(500);
    steps.after_declined_delete = eventsView();
    confirmAnswer = true;
    click(findEvent(first).remove);
    await until(() => cards().length === 2);
    steps.after_delete = eventsView();
    steps.confirmations = confirmations;
    steps.requested = [...new Set(requested)];
  },
  async counts(steps) {
    await until(() => $("counts-cameras").children.length && $("counts-lines").children.length && link());
    steps.counts = countsView();
  },
  async areas(steps) {
    const saved = (text) => until(() => $("editor-result").textContent === text || $("editor-errors").children.length);
    await until(() => options("editor-camera").length > 1 && $("cameras").children.length > 1);
    clickView("front");
    await sleep(500);
    steps.overlay = shapes($("live-overlay"));
    steps.editor_cameras = options("editor-camera");
    steps.before_picking = editorView();
    choose("editor-camera", "front");
    await until(() => ($("editor-snapshot").getAttribute("src") || "").startsWith("blob:"));
    steps.after_picking = editorView();
    $("editor-canvas").rect = { left: 10, top: 20, width: 800, height: 450 };
    for (const [x, y] of [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0]]) clickCanvas(x, y);
    steps.unfinished = editorView();
    click($("editor-finish"));
    steps.finished = editorView();
    type("editor-name", "yard");
    type("editor-labels", "person, car,");
    click($("editor-save"));
    await saved("saved zone yard");
    steps.after_zone = editorView();
    choose("editor-kind", "line");
    clickCanvas(0.5, 0);
    click($("editor-save"));
    steps.one_point_line = editorView();
    clickCanvas(0.5, 1);
    type("editor-name", "door");  // a line of camera back is called so
    click($("editor-save"));
    await saved("saved line door");
    steps.duplicate_name = editorView();
    type("editor-name", "gate");
    click($("editor-save"));
    await until(() => $("editor-result").textContent === "saved line gate");
    steps.after_line = editorView();
    steps.overlay_after = shapes($("live-overlay"));
    const yard = $("editor-areas").children.find((li) => li.dataset.area === "yard");
    click(yard.children[yard.children.length - 1]);
    await until(() => $("editor-result").textContent === "deleted zone yard");
    steps.after_delete = editorView();
    steps.overlay_after_delete = shapes($("live-overlay"));
    steps.requested = [...new Set(requested)];
    steps.sent = sent;
  },
  async camera_edit(steps) {
    const result = (text) => until(() => $("edit-result").textContent === text);
    const refused = () => until(() => $("edit-errors").children.length);
    await until(() => options("edit-camera").length === 2 && $("cameras").children.length === 2);
    steps.on_load = cameraForm();
    choose("edit-camera", "back");
    steps.back = cameraForm();
    type("edit-fps_limit", "-1");
    click($("edit-save"));
    await refused();
    steps.refused = cameraForm();
    type("edit-fps_limit", "5");
    $("edit-detect").checked = false;
    $("edit-detect").dispatch("change");
    choose("edit-decoder", "ffmpeg");
    click($("edit-save"));
    await until(() => $("edit-result").textContent === "saved");
    steps.saved = cameraForm();
    type("add-id", "side");
    type("add-source", "test://noise");
    click($("add-camera"));
    await result("added side");
    steps.added = cameraForm();
    type("add-id", "side");
    type("add-source", "test://noise");
    click($("add-camera"));
    await refused();
    steps.added_twice = cameraForm();
    confirmAnswer = false;
    click($("delete-camera"));
    await sleep(500);
    steps.declined_delete = cameraForm();
    confirmAnswer = true;
    click($("delete-camera"));
    await result("deleted side");
    steps.deleted = cameraForm();
    steps.confirmations = confirmations;
  },
  async config_editor(steps) {
    await until(() => $("config").value && options("edit-camera").length);
    const config = JSON.parse($("config").value);
    steps.loaded_cameras = config.cameras.map((cam) => cam.id);
    config.cameras[1].fps_limit = 3;
    $("config").value = JSON.stringify(config, null, 2);
    click($("config-apply"));
    await until(() => text($("config-result")));
    steps.applied = text($("config-result"));
    // Edits in progress survive a save made by another view.
    const edited = JSON.parse($("config").value);
    edited.device_id = "renamed-but-not-applied";
    $("config").value = JSON.stringify(edited, null, 2);
    choose("edit-camera", "front");
    type("edit-fps_limit", "2");
    click($("edit-save"));
    await until(() => $("edit-result").textContent);
    steps.camera_form = $("edit-result").textContent;
    steps.device_id_in_editor = JSON.parse($("config").value).device_id;
    click($("config-reload"));
    await until(() => JSON.parse($("config").value).device_id !== "renamed-but-not-applied");
    const reloaded = JSON.parse($("config").value);
    steps.after_reload = { device_id: reloaded.device_id, fps_limits: reloaded.cameras.map((cam) => cam.fps_limit) };
    steps.sent = sent;
  },
  async camera_restart(steps) {
    // The test publishes a new frame once this scenario writes the file $DASHBOARD_SIGNAL_FILE.
    await until(() => $("cameras").children.length === 2 && options("edit-camera").length === 2);
    clickView("front");
    await until(() => $("live").dataset.frame === "1");
    steps.before_edit = liveView();
    choose("edit-camera", "front");
    type("edit-fps_limit", "-1");  // refused: the view goes on at once
    click($("edit-save"));
    await until(() => $("edit-errors").children.length > 0);
    let mark = snapshotFetches();
    await until(() => snapshotFetches() > mark);
    steps.fetches_after_a_refused_edit = snapshotFetches() - mark;
    type("edit-fps_limit", "4");  // applied: the camera restarts, no frame until a new one
    click($("edit-save"));
    await until(() => $("edit-result").textContent === "saved");
    steps.saved = $("edit-result").textContent;
    mark = snapshotFetches();
    await sleep(1500);
    steps.fetches_before_a_new_frame = snapshotFetches() - mark;
    steps.while_waiting = liveView();
    writeFileSync(process.env.DASHBOARD_SIGNAL_FILE, "publish");
    await until(() => $("live").dataset.frame === "2");
    steps.fetches_after_a_new_frame = snapshotFetches() - mark;
    steps.after_a_new_frame = liveView();
  },
  async same_frame(steps) {
    await sleep(1500);
    clickView("front");
    steps.views = [];
    for (let i = 0; i < 40; i++) {
      await sleep(100);
      steps.views.push(liveView());
    }
  },
};

const steps = {};
const scripts = [...readFileSync(indexPath, "utf8").matchAll(/<script src="static\/([^"]+)"><\/script>/g)].map((m) => m[1]);
vm.createContext(context);
// static/shared/ is served from the folder the fleet page loads too (edge_app/http_server/shared_static/).
const scriptFile = (script) => script.startsWith("shared/")
  ? path.join(process.env.SHARED_STATIC_DIR, script.slice("shared/".length))
  : path.join(path.dirname(indexPath), script);
for (const script of scripts) {
  vm.runInContext(readFileSync(scriptFile(script), "utf8"), context, { filename: script });
}
await scenarios[scenario](steps);
console.log(JSON.stringify(steps));
process.exit(0);
