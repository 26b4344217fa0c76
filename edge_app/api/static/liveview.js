// The live view: the picked camera's picture with the detections of the same frame, their boxes
// drawn by the page (app.drawBoxes); of a camera that does not detect, its newest captured frame
// alone. Gives app.liveCamera(), app.holdLive(), app.releaseLive() and app.hasFrames().
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function liveView(app) {
  const LIVE_MS = 500;  // the live picture: a snapshot and its detections twice a second
  const SAME_FRAME_TRIES = 3;
  const { $, el, api, cameraPath, fetchImage, fmtNumber } = app;
  const L = globalThis.EdgeLogic;

  const state = {
    liveCamera: null,
    framesByCamera: {},  // camera id -> whether it has a picture (L.pictureCount; only those are fetched)
    cameraById: {},  // camera id -> its latest entry of /api/v1/cameras (state, last_error)
    liveTimer: null,
    liveActive: false,  // a live loop runs (a tick in flight or scheduled)
    liveGeneration: 0,  // bumped on every camera change, so an answer for the old camera is dropped
    frameBaseline: {},  // camera id -> its L.pictureCount when this page changed it (see holdLive)
    liveTick: null,  // the live tick in flight, if any
  };

  // ---- live view and detections ------------------------------------------------------------
  // The picture and the detections table show the same frame: a snapshot and the detections are
  // kept as a pair when their frames agree (X-Frame-Id and X-Frame-Timestamp against frame_id and
  // ts), else fetched again; a camera that keeps outrunning the requests gets its table's frame
  // named. The Authorization header keeps the token out of image URLs.

  function setLive(cameraId) {
    state.liveGeneration += 1;
    state.liveCamera = cameraId;
    $("live-name").textContent = cameraId ? cameraId : "(pick a camera)";
    $("detections").replaceChildren();
    $("detections").dataset.frame = "";
    $("detections-meta").textContent = "";
    showPicture(null);
    // Until its first picture arrives the viewer says so instead of staying a black box.
    showNote(cameraId ? "Loading " + cameraId + "…" : "", true);
    app.showViewing(cameraId);
    app.notify("live", cameraId);
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
  function showNote(text, loading) {
    const note = $("live-note");
    note.className = loading ? "live-note loading" : "live-note";
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

  // An edit restarts a camera: its frame is gone (503) while frames_analyzed stays. holdLive, before
  // the edit, stops its live view and waits for a tick in flight; releaseLive notes the count (of
  // the config saved), and frames are fetched again once it has grown.
  async function holdLive(id) {
    state.frameBaseline[id] = Infinity;
    stopLive();
    if (state.liveTick) await state.liveTick.catch(() => null);
  }

  async function releaseLive(id, changed) {
    if (changed) {
      const result = await api("api/v1/cameras/" + encodeURIComponent(id));
      state.frameBaseline[id] = result.ok && result.body ? L.pictureCount(result.body, app.cameraConfig(id)) : 0;
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
      app.handleError(err);
    } finally {
      state.liveTick = null;
      if (liveWanted()) state.liveTimer = setTimeout(liveTick, LIVE_MS);
      else state.liveActive = false;
    }
  }

  async function fetchPicture(id) {
    const picture = await fetchImage(cameraPath(id, "snapshot.jpg") + "?annotate=0");
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
    if (!L.detecting(state.cameraById[id], app.cameraConfig(id))) return { picture: await fetchPicture(id), detections: null };
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
    $("live-boxes").replaceChildren();
    body.dataset.frame = "";
    if (!result) {
      $("detections-meta").textContent = "Detecting off: no detections; the picture is the newest captured frame.";
      return;
    }
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
    if (picture) {
      app.drawBoxes($("live-boxes"), (msg.detections || []).filter((det) => Array.isArray(det.bbox) && det.bbox.length === 4)
        .map((det) => ({ box: det.bbox, label: det.label, score: det.confidence })), msg.width, msg.height);
    }
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

  // Which cameras have frames (only those are fetched), then the camera to view.
  function onCameras(cameras) {
    state.framesByCamera = {};
    state.cameraById = {};
    for (const cam of cameras) {
      const count = L.pictureCount(cam, app.cameraConfig(cam.id)), baseline = state.frameBaseline[cam.id];
      if (baseline !== undefined && count > baseline) delete state.frameBaseline[cam.id];
      state.framesByCamera[cam.id] = count > 0 && !(cam.id in state.frameBaseline);
      state.cameraById[cam.id] = cam;
    }
    for (const id of Object.keys(state.frameBaseline)) {
      if (!(id in state.cameraById)) delete state.frameBaseline[id];
    }
    // Frames are fetched for the camera picked, or the only one, and only once it has one.
    const wanted = L.cameraToView(state.liveCamera, cameras.map((cam) => cam.id));
    if (wanted !== state.liveCamera) setLive(wanted);
    else updateStream();
  }

  Object.assign(app, {
    liveCamera: () => state.liveCamera,
    setLive, holdLive, releaseLive,
    hasFrames: (id) => state.framesByCamera[id] === true,
  });
  return { cameras: onCameras, stop: () => setLive(null) };
});
