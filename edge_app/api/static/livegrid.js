// The live grid: every camera at once, each tile its camera's annotated picture (boxes drawn by
// the appliance), its zones and lines drawn by the page, and its state. A click shows the camera
// large in the live view below. What it costs is bounded: a tile asks for a picture at most every
// TILE_MS, one request at a time, and only while it is on screen, the Live section is open and
// the tab is visible; the grid's title shows what the tiles fetch per second.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function liveGrid(app) {
  const TILE_MS = 333;  // about 3 pictures a second per tile
  const QUALITY = 60;  // tiles are small: a lighter JPEG is enough
  const RATE_WINDOW_MS = 5000;
  const { $, el, cameraPath, fetchImage } = app;
  const tiles = new Map();  // camera id -> tile
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const tile = tiles.get(entry.target.dataset.camera);
      if (!tile) continue;
      tile.onScreen = entry.isIntersecting;
      kick(tile);
    }
  });
  let started = false;
  let rateShownMs = 0;
  let received = [];  // [time ms, bytes] of the pictures of the last RATE_WINDOW_MS

  function makeTile(id) {
    const node = el("button", null, "tile");
    node.type = "button";
    node.dataset.camera = id;
    node.setAttribute("aria-label", "camera " + id + ": show it large");
    const img = el("img");
    img.alt = "camera " + id;
    const svg = app.svgEl("svg", { class: "overlay", "aria-hidden": "true" });
    const note = el("span", "Loading…", "tile-note");
    const bar = el("span", null, "tile-bar");
    bar.append(el("span", id, "tile-name"));
    node.append(img, svg, note, bar);
    const tile = { id, node, img, svg, note, bar, cam: null, busy: false, timer: null, onScreen: false, shown: false };
    node.addEventListener("click", () => {
      app.setLive(id);
      $("live-one").scrollIntoView({ block: "start" });
    });
    // The shapes are drawn in the picture's pixels: again once the first picture says its size.
    img.addEventListener("load", () => { if (tile.drawnAt !== img.naturalWidth + "x" + img.naturalHeight) drawAreas(tile); });
    seen.observe(node);
    return tile;
  }

  function hasPicture(tile) {
    return !!tile.cam && globalThis.EdgeLogic.pictureCount(tile.cam, app.cameraConfig(tile.id)) > 0;
  }

  function wanted(tile) {
    return started && tile.onScreen && !document.hidden && !$("main").hidden && app.section() === "live" &&
      hasPicture(tile);
  }

  function kick(tile) {
    if (!tile.busy && !tile.timer && wanted(tile)) refreshTile(tile);
  }

  async function refreshTile(tile) {
    tile.busy = true;
    try {
      const picture = await fetchImage(cameraPath(tile.id, "snapshot.jpg") + "?annotate=1&quality=" + QUALITY);
      if (!tiles.has(tile.id)) return;
      if (picture.blob) {
        const old = tile.img.getAttribute("src");
        tile.img.src = URL.createObjectURL(picture.blob);
        if (old) URL.revokeObjectURL(old);
        tile.node.dataset.frame = picture.headers.get("X-Frame-Id") || "";
        tile.note.hidden = true;
        tile.shown = true;
        received.push([Date.now(), picture.blob.size]);
        if (Date.now() - rateShownMs > 1000) renderRate();
      } else if (!tile.shown) {
        tile.note.textContent = picture.error || "No picture yet (HTTP " + picture.status + ").";
      }
    } catch (err) {
      app.handleError(err);
    } finally {
      tile.busy = false;
      if (wanted(tile)) tile.timer = setTimeout(() => { tile.timer = null; kick(tile); }, TILE_MS);
    }
  }

  // The same zones, lines (with their "in" arrows) and masks as the live view's overlay.
  function drawAreas(tile) {
    const w = tile.img.naturalWidth || 1600, h = tile.img.naturalHeight || 900;
    app.fitSvg(tile.svg, w, h);
    tile.svg.replaceChildren(...app.areaShapes(app.cameraConfig(tile.id) || {}, w, h));
    tile.drawnAt = w + "x" + h;
  }

  function renderState(tile) {
    const cam = tile.cam, cfg = app.cameraConfig(tile.id) || {};
    const pills = [el("span", cam.state || "?", "pill state " + (cam.state || ""))];
    if (cam.motion && cam.motion.motion) pills.push(el("span", "motion", "pill motion"));
    if (!globalThis.EdgeLogic.detecting(cam, cfg)) pills.push(el("span", "detecting off", "pill nodetect"));
    tile.bar.replaceChildren(tile.bar.firstChild, ...pills);
    tile.node.dataset.state = cam.state || "";
    tile.node.classList.toggle("picked", app.liveCamera() === tile.id);
    if (!tile.shown && !hasPicture(tile)) {
      tile.note.textContent = cam.enabled === false ? "Disabled." : "Waiting for a frame (" + (cam.state || "unknown") + ")" +
        (cam.last_error ? ": " + cam.last_error : ".");
    }
  }

  function renderRate() {
    const nowMs = Date.now();
    rateShownMs = nowMs;
    received = received.filter(([t]) => nowMs - t < RATE_WINDOW_MS);
    const bytes = received.reduce((sum, [, size]) => sum + size, 0);
    const active = Array.from(tiles.values()).filter((tile) => tile.busy || tile.timer).length;
    $("grid-meta").textContent = "· " + tiles.size + " camera" + (tiles.size === 1 ? "" : "s") + " · " + active +
      " refreshing · " + (received.length / (RATE_WINDOW_MS / 1000)).toFixed(1) + " pictures/s, " +
      (bytes / 1024 / (RATE_WINDOW_MS / 1000)).toFixed(0) + " kB/s";
  }

  function onCameras(cameras) {
    const nodes = [];
    for (const cam of cameras) {
      let tile = tiles.get(cam.id);
      if (!tile) {
        tile = makeTile(cam.id);
        tiles.set(cam.id, tile);
      }
      tile.cam = cam;
      renderState(tile);
      drawAreas(tile);
      nodes.push(tile.node);
      kick(tile);
    }
    for (const [id, tile] of Array.from(tiles)) {
      if (cameras.some((cam) => cam.id === id)) continue;
      seen.unobserve(tile.node);
      clearTimeout(tile.timer);
      tiles.delete(id);
    }
    app.syncChildren($("live-grid"), nodes);
    $("live-grid-empty").hidden = cameras.length > 0;
    renderRate();
  }

  function kickAll() {
    for (const tile of tiles.values()) kick(tile);
  }

  document.addEventListener("visibilitychange", kickAll);
  return {
    start() { started = true; kickAll(); },
    stop() { started = false; },
    cameras: onCameras,
    section: kickAll,
    live() { for (const tile of tiles.values()) tile.node.classList.toggle("picked", app.liveCamera() === tile.id); },
  };
});
