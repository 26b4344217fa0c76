// Runs the dashboard's script in Node against a live API, with just enough of a DOM to see
// what the page shows. Prints one JSON object: what the page showed after each step of the
// scenario.
//   node dashboard_harness.mjs <api base url> <path to dashboard.js> [live_view|badge|same_frame] [token]
import { readFileSync } from "node:fs";
import vm from "node:vm";

const [, , base, scriptPath, scenario = "live_view", token] = process.argv;
const realFetch = globalThis.fetch;

class Element {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.listeners = {};
    this.hidden = false;
    this.disabled = false;
    this.textContent = "";
    this.className = "";
    this.value = "";
    this.colSpan = 1;
  }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
  dispatch(type) { for (const f of this.listeners[type] || []) f({ preventDefault() {} }); }
  append(...nodes) { this.children.push(...nodes); }
  replaceChildren(...nodes) { this.children = nodes; }
  focus() {}
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
  addEventListener(type, listener) { (documentListeners[type] ||= []).push(listener); },
};
const $ = (id) => document.getElementById(id);
const storage = new Map();
if (token) storage.set("edge-app.api-token", token);  // as if entered on the login form earlier
const requested = [];  // every path the page fetched, in order
const context = {
  document,
  window: { addEventListener() {} },
  sessionStorage: {
    getItem: (k) => (storage.has(k) ? storage.get(k) : null),
    setItem: (k, v) => storage.set(k, String(v)),
    removeItem: (k) => storage.delete(k),
  },
  fetch: (path, options) => {
    requested.push(String(path));
    return realFetch(new URL(path, base + "/"), options);
  },
  URL, setTimeout, clearTimeout, console, encodeURIComponent, Promise, Error, JSON, Object, Math, Date, String,
  Array, Number,
};
context.globalThis = context;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
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
    setHidden(true);
    await sleep(800);  // a tick in flight may still land
    const hiddenAt = snapshotFetches();
    await sleep(1500);
    steps.fetches_while_hidden = snapshotFetches() - hiddenAt;
    setHidden(false);
    await sleep(1200);
    steps.fetches_after_showing_again = snapshotFetches() - hiddenAt;
    steps.after_showing_the_page_again = liveView();
    steps.requested = [...new Set(requested)];
  },
  async badge(steps) {
    await sleep(1500);
    steps.link = { text: $("link").textContent, className: $("link").className };
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
vm.runInNewContext(readFileSync(scriptPath, "utf8"), context, { filename: "dashboard.js" });
await scenarios[scenario](steps);
console.log(JSON.stringify(steps));
process.exit(0);
