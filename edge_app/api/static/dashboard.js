// The built-in dashboard: polls the REST API and renders it. No libraries, no build step.
// Text from the appliance is always set with textContent, never parsed as HTML. shared/page.js
// (loaded first) brings what the fleet page uses too: api(), el(), setLink().
// The views in events.js, areas.js, cameras.js and config.js are loaded before this file and
// register a factory in globalThis.EdgeDashboardParts; this file hands each the shared `app`
// (requests with the token, the configuration, the live view's camera) and calls their hooks.
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
    config: null,  // the latest configuration from the appliance (the views' zones, lines, cameras)
    cameraRows: new Map(),  // camera id -> its row in the cameras table
    frameBaseline: {},  // camera id -> its frames_analyzed when this page changed it (see holdLive)
    liveTick: null,  // the live tick in flight, if any
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
    notify("stop");
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

  // Rows are kept and updated in place, keyed by camera, so a button stays the same element
  // between polls (a click never lands on a row that was just replaced).
  function cameraRow(id) {
    const row = el("tr");
    row.dataset.camera = id;
    const view = el("td");
    const button = el("button", "View", "secondary view");
    button.type = "button";
    button.addEventListener("click", () => setLive(id));
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
    button.textContent = state.liveCamera === cam.id ? "Viewing" : "View";
    button.disabled = state.liveCamera === cam.id;
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
    state.framesByCamera = {};
    state.cameraById = {};
    for (const cam of cameras) {
      const analysed = cam.frames_analyzed || 0, baseline = state.frameBaseline[cam.id];
      if (baseline !== undefined && analysed > baseline) delete state.frameBaseline[cam.id];
      state.framesByCamera[cam.id] = analysed > 0 && !(cam.id in state.frameBaseline);
      state.cameraById[cam.id] = cam;
    }
    for (const id of Object.keys(state.frameBaseline)) {
      if (!(id in state.cameraById)) delete state.frameBaseline[id];
    }
    // Frames are fetched for the camera picked, or the only one, and only once it has one.
    const wanted = globalThis.EdgeLogic.cameraToView(state.liveCamera, cameras.map((cam) => cam.id));
    if (wanted !== state.liveCamera) setLive(wanted);
    else updateStream();
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
    for (const [id, row] of state.cameraRows) {
      const button = row.children[7].children[0];
      button.textContent = id === cameraId ? "Viewing" : "View";
      button.disabled = id === cameraId;
    }
    notify("live", cameraId);
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
    return id !== null && !document.hidden && !$("main").hidden && state.framesByCamera[id] === true &&
      !(id in state.frameBaseline);
  }

  // An edit of a camera's settings restarts it: its frame is gone (the snapshot answers 503)
  // while its frames_analyzed count stays. holdLive, before the edit, stops the live view of the
  // camera and waits for a tick in flight; releaseLive, after it, notes the count, and frames
  // are fetched again once the count has grown, that is once the restarted camera has a frame.
  async function holdLive(id) {
    state.frameBaseline[id] = Infinity;
    stopLive();
    if (state.liveTick) await state.liveTick.catch(() => null);
  }

  async function releaseLive(id, changed) {
    if (changed) {
      const result = await api("api/v1/cameras/" + encodeURIComponent(id));
      const analysed = result.ok && result.body ? result.body.frames_analyzed || 0 : 0;
      state.frameBaseline[id] = analysed;
      state.framesByCamera[id] = false;
    } else {
      delete state.frameBaseline[id];
    }
    updateStream();
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
        state.liveTick = fetchSameFrame(id);
        const pair = await state.liveTick;
        if (generation === state.liveGeneration) renderLive(id, pair);
      }
    } catch (err) {
      handleError(err);
    } finally {
      state.liveTick = null;
      if (liveWanted()) state.liveTimer = setTimeout(liveTick, LIVE_MS);
      else state.liveActive = false;
    }
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

  async function fetchPicture(id) {
    const picture = await fetchImage(cameraPath(id, "snapshot.jpg") + "?annotate=1");
    if (picture.blob) {
      picture.frameId = Number(picture.headers.get("X-Frame-Id"));
      picture.ts = Number(picture.headers.get("X-Frame-Timestamp"));
    }
    return picture;
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
    $, el, api, fetchImage, cameraPath, fmtNumber, handleError, setConfig, setOptions, syncChildren, Unauthorized,
    reloadConfig: loadConfig,
    config: () => state.config,
    cameraConfig: (id) => ((state.config && state.config.cameras) || []).find((cam) => cam.id === id) || null,
    liveCamera: () => state.liveCamera,
    holdLive, releaseLive,
    hasFrames: (id) => state.framesByCamera[id] === true,
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
