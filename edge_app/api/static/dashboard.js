// The built-in dashboard: polls the REST API and renders it. No libraries, no build step.
// Text from the appliance is set with textContent, never parsed as HTML. shared/page.js (loaded
// first) brings api(), el(), setLink(). The views, loaded before this file, register a factory in
// globalThis.EdgeDashboardParts; this file hands each the shared `app` and calls their hooks.
"use strict";

(function () {
  const TOKEN_KEY = "edge-app.api-token";
  const POLL_MS = 2000;
  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || "",
    config: null,  // the latest configuration from the appliance (the views' zones, lines, cameras)
    cameraRows: new Map(),  // camera id -> its row in the cameras table
    timer: null,
    tick: 0,
  };

  const { Unauthorized, el, setLink } = globalThis.EdgePage;
  const api = globalThis.EdgePage.apiClient(() => state.token);

  // Puts `nodes` in `parent` in this order, touching the DOM only when something moved, so
  // pictures stay loaded and elements stay the same between refreshes.
  function syncChildren(parent, nodes) {
    const current = parent.children;
    if (nodes.length !== current.length || nodes.some((node, i) => current[i] !== node)) parent.replaceChildren(...nodes);
  }

  // Fills a <select> with [{value, text}], keeping its choice when that is still offered.
  function setOptions(select, options) {
    const wanted = JSON.stringify(options);
    if (select.dataset.options === wanted) return;
    const chosen = select.value;
    select.dataset.options = wanted;
    select.replaceChildren(...options.map((option) => {
      const node = el("option", option.text);
      node.value = option.value;
      return node;
    }));
    select.value = options.some((option) => option.value === chosen) ? chosen : options.length ? options[0].value : "";
  }

  function fmtNumber(value, digits = 1) {
    return typeof value === "number" ? value.toFixed(digits) : "–";
  }

  function fmtUptime(seconds) {
    if (typeof seconds !== "number") return "–";
    const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60);
    return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + Math.floor(seconds % 60) + "s";
  }

  function cameraPath(id, leaf) {
    return "api/v1/cameras/" + encodeURIComponent(id) + "/" + leaf;
  }

  // ---- login -------------------------------------------------------------------------------

  function showLogin(message) {
    stopPolling();
    notify("stop");  // the live view stops too
    $("main").hidden = true;
    $("health-banner").hidden = true;
    $("login").hidden = false;
    setLink("locked", "offline");
    $("login-error").textContent = message || "";
    $("token-input").focus();
  }

  function showMain() {
    $("login").hidden = true;
    $("main").hidden = false;
    $("forget-token").hidden = !state.token;
  }

  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token-input").value.trim();
    sessionStorage.setItem(TOKEN_KEY, state.token);
    start();
  });

  $("forget-token").addEventListener("click", () => {
    state.token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });

  // ---- status and cameras ------------------------------------------------------------------

  function renderStatus(s) {
    $("device-id").textContent = s.device_id || "";
    const model = s.model || {}, mqtt = s.mqtt || {}, pipe = s.pipeline || {}, lat = pipe.latency_ms || {};
    const facts = [
      ["Version", s.version],
      ["Uptime", fmtUptime(s.uptime_s)],
      ["Backend", s.backend || "–"],
      ["Model", [(model.path || "–") + " (" + (model.precision || "?") + ", " + (model.input_size || "auto") + ")",
        ...modelSource((s.models || [])[0] || {})].join(" · ")],
      ["MQTT", (mqtt.connected ? "connected" : "disconnected") + " · published " + (mqtt.published ?? "–") +
        " · queued " + (mqtt.queued ?? "–") + " · dropped " + (mqtt.dropped ?? "–")],
      ["Pipeline", fmtNumber(pipe.fps) + " fps · latency p50 " + fmtNumber(lat.p50) + " ms, p99 " + fmtNumber(lat.p99) + " ms"],
    ];
    // Several models: one line each, with its state and the cameras it analyses.
    const models = s.models || [];
    if (models.length > 1) {
      const at = facts.findIndex(([name]) => name === "Model");
      facts.splice(at, 1, ...models.map((m) => ["Model " + m.name, modelFact(m)]));
    }
    const summary = (s.health || {}).summary;
    if (summary) {
      facts.push(["Health", fmtNumber(summary.temperature_c) + " °C · GPU " + fmtNumber(summary.gpu_load_percent) +
        " % · disk " + fmtNumber(summary.disk_used_percent) + " % · memory " + fmtNumber(summary.memory_used_percent) +
        " %" + (summary.power_mode ? " · " + summary.power_mode : "")]);
    }
    const recording = recordingFact(s);
    if (recording) facts.push(["Recording", recording]);
    const dl = $("status");
    dl.replaceChildren();
    for (const [name, value] of facts) {
      dl.append(el("dt", name), el("dd", value ?? "–"));
    }
    const problems = ((s.health || {}).problems || []).map((p) => p.message || p.kind);
    // A recorder that stopped writing (disk below its reserve) is a problem the owner must see.
    if (s.recording && s.recording.paused) problems.unshift("Recording paused: " + s.recording.paused);
    // A camera that is down is the first thing to see, whichever section is open.
    // (A camera connecting for the first time is not one yet: it reconnects when that fails.)
    const down = (s.cameras || []).filter((c) => c.enabled !== false && c.state && !["streaming", "connecting"].includes(c.state));
    problems.unshift(...down.map((c) => "Camera " + c.id + " is " + c.state + (c.last_error ? ": " + c.last_error : "")));
    // A notification target whose last attempt failed (no delivery since its last error).
    for (const t of (s.notifications || {}).targets || []) {
      if (t.last_error && (t.last_error_time || 0) > (t.last_delivery_time || 0)) {
        problems.push("Notifications to " + t.name + " fail: " + t.last_error);
      }
    }
    renderHealthBanner(problems);
  }

  // Whether the recorder writes (or why not), the cameras that cannot record and why, and the
  // encoder of each camera whose privacy masks are burnt into its recordings, with its drops.
  function recordingFact(s) {
    const rec = s.recording;
    if (!rec) return null;
    const state = rec.paused ? "paused: " + rec.paused
      : "writing · " + ((rec.recording || []).join(", ") || "no camera now") + " · " +
        fmtNumber((rec.bytes_written || 0) / 1e6) + " MB written";
    const unavailable = (s.cameras || []).filter((c) => c.recording && c.recording.unavailable)
      .map((c) => c.id + ": " + c.recording.unavailable);
    const masked = (s.cameras || []).filter((c) => c.recording && c.recording.masked_encoder)
      .map((c) => c.id + ": masked, re-encoded with " + c.recording.masked_encoder + ", "
        + String(c.recording.masked_packets_dropped || 0) + " packets dropped");
    return [state, ...unavailable, ...masked].join(" · ");
  }

  // What runs of a model beyond its path: the fleet artifact and version (or that path runs in its
  // stead), and its engine build while one is under way.
  function modelSource(m) {
    const parts = [];
    if (m.artifact) parts.push("fleet " + m.artifact.name + " version " + m.artifact.version);
    else if (m.fallback) parts.push(m.fallback);
    const build = m.engine_build;
    if (build && build.state === "building") {
      parts.push("engine build " + (build.percent == null ? "" : fmtNumber(build.percent) + " % ") + "(" + build.phase + ")");
    }
    return parts;
  }

  function modelFact(m) {
    const lat = m.latency_ms || {};
    const state = m.state === "failed" ? "failed: " + (m.error || "?") : (m.state || "?");
    return [state, m.backend || "–", m.path || "–", ...modelSource(m)].join(" · ") + " · cameras " +
      ((m.cameras || []).join(", ") || "none") + " · " + fmtNumber(m.fps) + " fps, " + fmtNumber(m.batches_per_s) +
      " batches/s, p50 " + fmtNumber(lat.p50) + " ms";
  }

  // A banner while the device has problems (hot, throttling, disk or memory nearly full, recording paused).
  function renderHealthBanner(problems) {
    const list = $("health-problems");
    list.replaceChildren(...problems.map((text) => el("li", text)));
    $("health-banner").hidden = problems.length === 0 || $("main").hidden;
  }

  // The header badge: "online" only while the API answers and the appliance reaches its broker;
  // detections that go nowhere are not a healthy appliance.
  function linkFromStatus(status) {
    if (!status.ok || !status.body) return ["status unavailable", "warn"];
    const mqtt = status.body.mqtt || {};
    if (mqtt.connected === false) return ["MQTT disconnected", "warn"];
    return ["online", "ok"];
  }

  // Rows are kept and updated in place, keyed by camera, so a button stays the same element
  // between polls (a click never lands on a row that was just replaced).
  function cameraRow(id) {
    const row = el("tr");
    row.dataset.camera = id;
    const view = el("td");
    const button = el("button", "View", "secondary view");
    button.type = "button";
    button.setAttribute("aria-label", "view camera " + id + " live");
    button.addEventListener("click", () => {
      app.setLive(id);
      app.showSection("live");
    });
    view.append(button);
    row.append(el("td", id));
    for (let i = 0; i < 6; i++) row.append(el("td"));
    row.append(view);
    return row;
  }

  function updateCameraRow(row, cam) {
    const cells = row.children;
    const pill = el("span", cam.state || "?", "pill " + (cam.state || ""));
    cells[1].replaceChildren(pill);
    const texts = [fmtNumber(cam.fps), cam.frames_captured ?? "–", cam.frames_analyzed ?? "–", cam.reconnects ?? "–"];
    texts.forEach((text, i) => {
      cells[2 + i].textContent = String(text);
      cells[2 + i].className = "num";
    });
    cells[6].textContent = cam.last_error || "";
    cells[6].className = cam.last_error ? "error" : "";
    const button = cells[7].children[0];
    button.textContent = app.liveCamera() === cam.id ? "Viewing" : "View";
    button.disabled = app.liveCamera() === cam.id;
  }

  // The camera in the live view is "Viewing", and its button cannot be pressed again.
  function showViewing(cameraId) {
    for (const [id, row] of state.cameraRows) {
      const button = row.children[7].children[0];
      button.textContent = id === cameraId ? "Viewing" : "View";
      button.disabled = id === cameraId;
    }
  }

  function renderCameras(cameras) {
    const body = $("cameras");
    const rows = [];
    for (const cam of cameras) {
      let row = state.cameraRows.get(cam.id);
      if (!row) {
        row = cameraRow(cam.id);
        state.cameraRows.set(cam.id, row);
      }
      updateCameraRow(row, cam);
      rows.push(row);
    }
    for (const id of Array.from(state.cameraRows.keys())) {
      if (!cameras.some((cam) => cam.id === id)) state.cameraRows.delete(id);
    }
    if (!cameras.length) {
      const row = el("tr");
      const cell = el("td", "No cameras configured.", "muted");
      cell.colSpan = 8;
      row.append(cell);
      rows.push(row);
    }
    syncChildren(body, rows);
  }

  // A picture fetched with the token in a header (never in its URL), to show as a blob: URL.
  async function fetchImage(path) {
    const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
    const response = await fetch(path, { headers, cache: "no-store" });
    if (response.status === 401) throw new Unauthorized();
    if (!response.ok) {
      let body = null;
      try { body = await response.json(); } catch (_) { body = null; }
      return { status: response.status, error: body && body.error };
    }
    return { status: response.status, blob: await response.blob(), headers: response.headers };
  }

  // ---- configuration ----------------------------------------------------------------------
  // The views (config.js's editor included) get every configuration the appliance answers.

  function setConfig(body) {
    const config = Object.assign({}, body);
    delete config.restart_required;
    state.config = config;
    notify("config", config);
    return config;
  }

  async function loadConfig() {
    const result = await api("api/v1/config");
    if (result.ok) setConfig(result.body);
    else notify("configError", (result.body && result.body.error) || "Could not load the configuration.");
  }

  // ---- polling -----------------------------------------------------------------------------

  function handleError(err) {
    if (err instanceof Unauthorized) {
      showLogin(state.token ? "That token was not accepted." : "");
      return;
    }
    setLink("offline", "offline");
  }

  async function refresh() {
    state.tick += 1;
    // The views' own requests (events, counts) wait while the tab is hidden.
    const views = document.hidden ? [] : parts.filter((part) => part.poll).map((part) => part.poll(state.tick));
    const [status, cameras] = await Promise.all([api("api/v1/status"), api("api/v1/cameras"), ...views]);
    if (status.ok) renderStatus(status.body);
    if (cameras.ok) {
      renderCameras(cameras.body);
      notify("cameras", cameras.body);
    }
    const [text, cls] = linkFromStatus(status);
    setLink(text, cls);
  }

  function stopPolling() {
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
  }

  function poll() {
    refresh()
      .catch(handleError)
      .finally(() => {
        if (!$("main").hidden) state.timer = setTimeout(poll, POLL_MS);
      });
  }

  async function start() {
    stopPolling();
    try {
      await loadConfig();
    } catch (err) {
      handleError(err);
      if (err instanceof Unauthorized) return;
    }
    showMain();
    notify("start");
    poll();
  }

  // ---- the views of the other files -------------------------------------------------------

  const app = {
    $, el, api, fetchImage, cameraPath, fmtNumber, handleError, notify, setConfig, setOptions, showViewing, syncChildren,
    Unauthorized,
    reloadConfig: loadConfig,
    config: () => state.config,
    cameraConfig: (id) => ((state.config && state.config.cameras) || []).find((cam) => cam.id === id) || null,
  };
  const parts = (globalThis.EdgeDashboardParts || []).map((make) => make(app));

  function notify(hook, ...args) {
    for (const part of parts) {
      if (!part[hook]) continue;
      try {
        part[hook](...args);
      } catch (err) {
        handleError(err);
      }
    }
  }

  start();
})();
