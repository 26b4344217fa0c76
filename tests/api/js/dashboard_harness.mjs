// Runs the dashboard's script in Node against a live API, with just enough of a DOM to see
// what the page does with its live view. Prints one JSON object: the <img src> of the live
// view after each step of the scenario.
//   node dashboard_harness.mjs <api base url> <path to dashboard.js>
import { readFileSync } from "node:fs";
import vm from "node:vm";

const [, , base, scriptPath] = process.argv;
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
const storage = new Map();
const context = {
  document,
  window: { addEventListener() {} },
  sessionStorage: {
    getItem: (k) => (storage.has(k) ? storage.get(k) : null),
    setItem: (k, v) => storage.set(k, String(v)),
    removeItem: (k) => storage.delete(k),
  },
  fetch: (path, options) => realFetch(new URL(path, base + "/"), options),
  setTimeout, clearTimeout, console, encodeURIComponent, Promise, Error, JSON, Object, Math, Date, String, Array,
};
context.globalThis = context;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const liveSrc = () => document.getElementById("live").getAttribute("src");

function clickView(cameraId) {
  for (const row of document.getElementById("cameras").children) {
    if (row.children[0] && row.children[0].textContent === cameraId) {
      const button = row.children[row.children.length - 1].children[0];
      button.dispatch("click");
      return;
    }
  }
  throw new Error("no row for camera " + cameraId);
}

const steps = {};
vm.runInNewContext(readFileSync(scriptPath, "utf8"), context, { filename: "dashboard.js" });
await sleep(1500);
steps.after_load = liveSrc();
clickView("back");
await sleep(2500);
steps.after_picking_a_camera_without_frames = liveSrc();
clickView("front");
await sleep(300);
steps.after_picking_a_camera_with_frames = liveSrc();
document.hidden = true;
for (const f of documentListeners.visibilitychange || []) f();
steps.after_hiding_the_page = liveSrc();
document.hidden = false;
for (const f of documentListeners.visibilitychange || []) f();
steps.after_showing_the_page_again = liveSrc();
console.log(JSON.stringify(steps));
process.exit(0);
