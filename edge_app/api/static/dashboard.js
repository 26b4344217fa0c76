// The built-in dashboard: polls the REST API and renders it. No libraries, no build step.
// Text from the appliance is always set with textContent, never parsed as HTML.
"use strict";

(function () {
  const TOKEN_KEY = "edge-app.api-token";
  const POLL_MS = 2000;
  const LIVE_MS = 500;  // the live picture: a snapshot and its detections twice a second
  const SAME_FRAME_TRIES = 3;
  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || "",
    liveCamera: null,
    framesByCamera: {},  // camera id -> whether it has analysed a frame (only those are fetched)
    cameraById: {},  // camera id -> its latest entry of /api/v1/cameras (state, last_error)
    liveTimer: null,
    liveActive: false,  // a live loop runs (a tick in flight or scheduled)
    liveGeneration: 0,  // bumped on every camera change, so an answer for the old camera is dropped
    loadedConfig: null,
    timer: null,
  };

  class Unauthorized extends Error {}

  async function api(path, options = {}) {
    const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const response = await fetch(path, Object.assign({}, options, { headers }));
    if (response.status === 401) throw new Unauthorized();
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    return { status: response.status, ok: response.ok, body };
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
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

  function setLink(text, cls) {
    const link = $("link");
    link.textContent = text;
    link.className = "pill " + cls;
  }

  // ---- login -------------------------------------------------------------------------------

  function showLogin(message) {
    stopPolling();
    setLive(null);
    $("main").hidden = true;
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
      ["Model", (model.path || "–") + " (" + (model.precision || "?") + ", " + (model.input_size || "auto") + ")"],
      ["MQTT", (mqtt.connected ? "connected" : "disconnected") + " · published " + (mqtt.published ?? "–") +
        " · queued " + (mqtt.queued ?? "–") + " · dropped " + (mqtt.dropped ?? "–")],
      ["Pipeline", fmtNumber(pipe.fps) + " fps · latency p50 " + fmtNumber(lat.p50) + " ms, p99 " + fmtNumber(lat.p99) + " ms"],
    ];
    const dl = $("status");
    dl.replaceChildren();
    for (const [name, value] of facts) {
      dl.append(el("dt", name), el("dd", value ?? "–"));
    }
  }

  // The header badge: "online" only while the API answers and the appliance reaches its broker;
  // detections that go nowhere are not a healthy appliance.
  function linkFromStatus(status) {
    if (!status.ok || !status.body) return ["status unavailable", "warn"];
    const mqtt = status.body.mqtt || {};
    if (mqtt.connected === false) return ["MQTT disconnected", "warn"];
    return ["online", "ok"];
  }

  function renderCameras(cameras) {
    const body = $("cameras");
    body.replaceChildren();
    for (const cam of cameras) {
      const row = el("tr");
      const state_ = el("td");
      state_.append(el("span", cam.state || "?", "pill " + (cam.state || "")));
      const view = el("td");
      const button = el("button", state.liveCamera === cam.id ? "Viewing" : "View", "secondary");
      button.disabled = state.liveCamera === cam.id;
      button.addEventListener("click", () => setLive(cam.id));
      view.append(button);
      row.append(
        el("td", cam.id), state_, el("td", fmtNumber(cam.fps), "num"), el("td", cam.frames_captured ?? "–", "num"),
        el("td", cam.frames_analyzed ?? "–", "num"), el("td", cam.reconnects ?? "–", "num"),
        el("td", cam.last_error || "", cam.last_error ? "error" : ""), view,
      );
      body.append(row);
    }
    if (!cameras.length) {
      const row = el("tr");
      const cell = el("td", "No cameras configured.", "muted");
      cell.colSpan = 8;
      row.append(cell);
      body.append(row);
    }
    state.framesByCamera = {};
    state.cameraById = {};
    for (const cam of cameras) {
      state.framesByCamera[cam.id] = (cam.frames_analyzed || 0) > 0;
      state.cameraById[cam.id] = cam;
    }
    // No camera is picked for the viewer: a live view costs the appliance JPEG encodes, so
    // frames are fetched only when asked for, and only once the camera has one.
    updateStream();
  }

  // ---- live view and detections ------------------------------------------------------------
  // The picture and the detections table show the same frame. Each tick fetches the latest
  // detections and the annotated snapshot and keeps them as a pair when their frames agree
  // (the snapshot's X-Frame-Id and X-Frame-Timestamp, the detections' frame_id and ts). A new
  // frame can land between the two requests; the pair is then fetched again, and if the camera
  // keeps outrunning the requests the table says which frame it is from. Fetching with the
  // Authorization header also keeps the token out of image URLs.

  function setLive(cameraId) {
    state.liveGeneration += 1;
    state.liveCamera = cameraId;
    $("live-name").textContent = cameraId ? cameraId : "(pick a camera)";
    $("detections").replaceChildren();
    $("detections").dataset.frame = "";
    $("detections-meta").textContent = "";
    showPicture(null);
    showNote("");
    updateStream();
  }

  function showPicture(blob, frameId) {
    const img = $("live");
    const old = img.getAttribute("src");
    if (blob) {
      img.src = URL.createObjectURL(blob);
      img.dataset.frame = String(frameId);
    } else {
      if (old) img.removeAttribute("src");
      img.dataset.frame = "";
    }
    if (old && old.startsWith("blob:")) URL.revokeObjectURL(old);
  }

  // What the viewer shows instead of an empty black box.
  function showNote(text) {
    const note = $("live-note");
    note.textContent = text || "";
    note.hidden = !text;
  }

  function noFrameText(id) {
    const cam = state.cameraById[id] || {};
    let text = "Camera " + id + " has not produced a frame yet. State: " + (cam.state || "unknown") + ".";
    if (cam.enabled === false) text += " The camera is disabled in the configuration.";
    text += cam.last_error ? " Last error: " + cam.last_error : " No error reported so far.";
    return text;
  }

  function liveWanted() {
    const id = state.liveCamera;
    return id !== null && !document.hidden && !$("main").hidden && state.framesByCamera[id] === true;
  }

  function stopLive() {
    // A tick in flight stops by itself when it finds the view no longer wanted.
    if (state.liveTimer) {
      clearTimeout(state.liveTimer);
      state.liveTimer = null;
      state.liveActive = false;
    }
  }

  // Starts fetching the picked camera's frames when it has some and the page is visible, and
  // stops otherwise; a camera without a frame gets its state and last error instead.
  function updateStream() {
    const id = state.liveCamera;
    if (!liveWanted()) {
      stopLive();
      if (id !== null && state.framesByCamera[id] === false) {
        showPicture(null);
        showNote(noFrameText(id));
        $("detections-meta").textContent = "No frame yet.";
      }
      return;
    }
    if (!state.liveActive) {
      state.liveActive = true;
      liveTick();
    }
  }

  async function liveTick() {
    state.liveTimer = null;
    const id = state.liveCamera, generation = state.liveGeneration;
    try {
      if (liveWanted()) {
        const pair = await fetchSameFrame(id);
        if (generation === state.liveGeneration) renderLive(id, pair);
      }
    } catch (err) {
      handleError(err);
    } finally {
      if (liveWanted()) state.liveTimer = setTimeout(liveTick, LIVE_MS);
      else state.liveActive = false;
    }
  }

  async function fetchPicture(id) {
    const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
    const response = await fetch(cameraPath(id, "snapshot.jpg") + "?annotate=1", { headers, cache: "no-store" });
    if (response.status === 401) throw new Unauthorized();
    if (!response.ok) {
      let body = null;
      try { body = await response.json(); } catch (_) { body = null; }
      return { status: response.status, error: body && body.error };
    }
    return {
      status: response.status,
      blob: await response.blob(),
      frameId: Number(response.headers.get("X-Frame-Id")),
      ts: Number(response.headers.get("X-Frame-Timestamp")),
    };
  }

  function sameFrame(picture, msg) {
    // Frame ids start again at 1 when a camera restarts; the capture time tells those apart.
    return !!(picture && picture.blob && msg) && picture.frameId === msg.frame_id && Math.abs(picture.ts - msg.ts) < 0.01;
  }

  async function fetchSameFrame(id) {
    let detections = await api(cameraPath(id, "detections"));
    let picture = null;
    for (let attempt = 0; attempt < SAME_FRAME_TRIES; attempt++) {
      picture = await fetchPicture(id);
      if (picture.status !== 200 || !detections.ok || sameFrame(picture, detections.body)) break;
      // A newer frame landed between the two requests: the latest detections are its own now.
      detections = await api(cameraPath(id, "detections"));
      if (sameFrame(picture, detections.body)) break;
    }
    return { picture, detections };
  }

  function renderLive(id, pair) {
    const picture = pair.picture;
    if (picture.status === 503) {
      showPicture(null);
      showNote(noFrameText(id));
    } else if (picture.status !== 200) {
      showPicture(null);
      showNote(picture.error || "Could not load the picture (HTTP " + picture.status + ").");
    } else {
      showNote("");
      showPicture(picture.blob, picture.frameId);
    }
    renderDetections(pair.detections, picture.status === 200 ? picture : null);
  }

  function renderDetections(result, picture) {
    const body = $("detections");
    body.replaceChildren();
    body.dataset.frame = "";
    if (result.status === 503) {
      $("detections-meta").textContent = "No detections yet.";
      return;
    }
    if (!result.ok || !result.body) {
      $("detections-meta").textContent = (result.body && result.body.error) || "Could not load detections.";
      return;
    }
    const msg = result.body;
    body.dataset.frame = String(msg.frame_id);
    const when = typeof msg.ts === "number" ? new Date(msg.ts * 1000).toLocaleTimeString() : "?";
    let meta = "Frame " + msg.frame_id + " at " + when + " · " + msg.width + "×" + msg.height +
      " · latency " + fmtNumber(msg.latency_ms) + " ms";
    if (picture && !sameFrame(picture, msg)) meta += " · the picture shows frame " + picture.frameId;
    $("detections-meta").textContent = meta;
    for (const det of msg.detections || []) {
      const row = el("tr");
      row.append(el("td", det.label), el("td", fmtNumber(det.confidence, 2), "num"),
        el("td", (det.bbox || []).map((v) => Math.round(v)).join(", "), "num"));
      body.append(row);
    }
    if (!(msg.detections || []).length) {
      const row = el("tr");
      const cell = el("td", "Nothing detected in this frame.", "muted");
      cell.colSpan = 3;
      row.append(cell);
      body.append(row);
    }
  }

  document.addEventListener("visibilitychange", updateStream);
  window.addEventListener("pagehide", stopLive);

  // ---- configuration editor ----------------------------------------------------------------

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  // The RFC 7396 merge patch that turns `before` into `after`: removed keys become null,
  // objects are diffed key by key, anything else (arrays included) is sent whole when changed.
  function mergeDiff(before, after) {
    const patch = {};
    for (const key of Object.keys(before)) {
      if (!(key in after)) patch[key] = null;
    }
    for (const key of Object.keys(after)) {
      if (!(key in before)) {
        patch[key] = after[key];
      } else if (isObject(before[key]) && isObject(after[key])) {
        const sub = mergeDiff(before[key], after[key]);
        if (Object.keys(sub).length) patch[key] = sub;
      } else if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) {
        patch[key] = after[key];
      }
    }
    return patch;
  }

  function showConfig(config) {
    const copy = Object.assign({}, config);
    delete copy.restart_required;
    state.loadedConfig = copy;
    $("config").value = JSON.stringify(copy, null, 2);
  }

  function showResult(text, cls, details) {
    const box = $("config-result");
    box.replaceChildren(el("p", text, cls));
    if (details && details.length) {
      const list = el("ul");
      for (const d of details) list.append(el("li", (d.loc ? d.loc + ": " : "") + d.msg, "error"));
      box.append(list);
    }
  }

  async function loadConfig() {
    const result = await api("api/v1/config");
    if (result.ok) showConfig(result.body);
    else showResult((result.body && result.body.error) || "Could not load the configuration.", "error");
  }

  async function applyConfig() {
    let edited;
    try {
      edited = JSON.parse($("config").value);
    } catch (err) {
      showResult("Not valid JSON: " + err.message, "error");
      return;
    }
    if (!isObject(edited) || !state.loadedConfig) {
      showResult("The configuration must be a JSON object.", "error");
      return;
    }
    const patch = mergeDiff(state.loadedConfig, edited);
    if (!Object.keys(patch).length) {
      showResult("Nothing changed.", "muted");
      return;
    }
    $("config-apply").disabled = true;
    try {
      const result = await api("api/v1/config", {
        method: "PATCH",
        headers: { "Content-Type": "application/merge-patch+json" },
        body: JSON.stringify(patch),
      });
      if (result.ok) {
        const restart = result.body.restart_required || [];
        showConfig(result.body);
        showResult(restart.length ? "Applied and saved. Restart the appliance for: " + restart.join(", ") : "Applied and saved.", "ok");
      } else {
        showResult((result.body && result.body.error) || "HTTP " + result.status, "error", result.body && result.body.details);
      }
    } finally {
      $("config-apply").disabled = false;
    }
  }

  $("config-apply").addEventListener("click", () => applyConfig().catch(handleError));
  $("config-reload").addEventListener("click", () => {
    $("config-result").replaceChildren();
    loadConfig().catch(handleError);
  });

  // ---- polling -----------------------------------------------------------------------------

  function handleError(err) {
    if (err instanceof Unauthorized) {
      showLogin(state.token ? "That token was not accepted." : "");
      return;
    }
    setLink("offline", "offline");
  }

  async function refresh() {
    const [status, cameras] = await Promise.all([api("api/v1/status"), api("api/v1/cameras")]);
    if (status.ok) renderStatus(status.body);
    if (cameras.ok) renderCameras(cameras.body);
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
    poll();
  }

  start();
})();
