// Zones, lines, motion masks and privacy masks: drawn over the live view of the picked camera, and
// the editor that adds and removes them (PATCH /api/v1/cameras/<id> with the camera's whole zones,
// lines, motion.masks or privacy.masks list); a privacy mask can be redrawn in its place too.
// Both SVGs use the picture's own pixels as their viewBox, so points are normalised <-> pixels
// with the picture's natural size, whatever size the browser shows it at.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function areas(app) {
  const L = globalThis.EdgeLogic;
  const Z = globalThis.EdgeZoneRules;
  const { $, el } = app;
  const svgEl = app.svgEl;
  const FALLBACK_SIZE = [1600, 900];  // before a picture has loaded
  // What the editor draws on when the camera has no frame yet: zones can be placed all the same.
  const NO_FRAME = "data:image/svg+xml," + encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="900"><rect width="1600" height="900" fill="#2a2f3a"/>' +
    '<text x="800" y="460" fill="#aab" font-family="sans-serif" font-size="40" text-anchor="middle">no frame yet</text></svg>');

  // editing: the privacy mask ("privacy mask 2") the drawing replaces when saved; "" adds one
  const editor = { camera: "", points: [], finished: false, url: null, generation: 0, editing: "" };

  function svgText(text, x, y, className) {
    const node = svgEl("text", { x, y }, className);
    node.textContent = text;
    return node;
  }

  function pictureSize(img) {
    return img.naturalWidth > 0 && img.naturalHeight > 0 ? [img.naturalWidth, img.naturalHeight] : FALLBACK_SIZE;
  }

  function pointsAttribute(points, w, h) {
    return points.map((p) => L.toPixel(p, w, h).map((v) => v.toFixed(1)).join(",")).join(" ");
  }

  // A zone: its polygon and name. `attributes` marks it for the page (data-zone).
  function zoneShape(area, w, h, attributes) {
    const group = svgEl("g", {}, "zone");
    const polygon = svgEl("polygon", Object.assign({ points: pointsAttribute(area.points, w, h) }, attributes));
    const [x, y] = L.toPixel(area.points[0], w, h);
    group.append(polygon, svgText(area.name, x + 4, y + fontSize(w, h) + 2, "area-name"));
    return group;
  }

  // A line: P1 -> P2 with its arrow head, and an arrow across it towards its "in" side.
  function lineShape(area, w, h, attributes) {
    const g = L.lineGeometry(area.points, w, h);
    const group = svgEl("g", {}, "area-line");
    const line = svgEl("line", Object.assign({ x1: g.x1, y1: g.y1, x2: g.x2, y2: g.y2 }, attributes));
    const head = svgEl("polygon", { points: g.head.map((p) => p.join(",")).join(" ") }, "arrow-head");
    const across = svgEl("line", { x1: g.inFrom[0], y1: g.inFrom[1], x2: g.inTo[0], y2: g.inTo[1] }, "in-arrow");
    const acrossHead = svgEl("polygon", { points: g.inHead.map((p) => p.join(",")).join(" ") }, "in-arrow-head");
    // A dark halo under the "in" arrow: it stays visible on a bright or a busy picture.
    const halo = svgEl("line", { x1: g.inFrom[0], y1: g.inFrom[1], x2: g.inTo[0], y2: g.inTo[1] }, "in-arrow-halo");
    group.append(line, head, halo, across, acrossHead, svgText("in", g.inLabel[0], g.inLabel[1], "in-label"),
      svgText(area.name, g.x1 + 4, g.y1 + fontSize(w, h) + 2, "area-name"));
    return group;
  }

  function fontSize(w, h) {
    return Math.max(12, Math.round(Math.min(w, h) / 30));
  }

  // A motion mask: a zone's shape, hatched, where motion does not count.
  function maskShape(area, w, h, attributes) {
    const group = zoneShape(area, w, h, attributes);
    group.setAttribute("class", "motion-mask");
    return group;
  }

  // A privacy mask: a zone's shape in its own colour; these pixels never leave the device.
  function privacyShape(area, w, h, attributes) {
    const group = zoneShape(area, w, h, attributes);
    group.setAttribute("class", "privacy-mask");
    return group;
  }

  function drawAreas(camera, w, h) {
    const nodes = [];
    for (const area of L.cameraAreas(camera)) {
      if (area.kind === "zone") nodes.push(zoneShape(area, w, h, { "data-zone": area.name }));
      else if (area.kind === "mask") nodes.push(maskShape(area, w, h, { "data-mask": area.name }));
      else if (area.kind === "privacy") nodes.push(privacyShape(area, w, h, { "data-privacy": area.name }));
      else nodes.push(lineShape(area, w, h, { "data-line": area.name }));
    }
    return nodes;
  }

  function fitSvg(svg, w, h) {
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("font-size", fontSize(w, h));  // SVG text inherits it
  }

  // ---- the live view's overlay ---------------------------------------------------------------

  function renderOverlay() {
    const svg = $("live-overlay");
    const id = app.liveCamera();
    const camera = id === null ? null : app.cameraConfig(id);
    const [w, h] = pictureSize($("live"));
    fitSvg(svg, w, h);
    svg.replaceChildren(...(camera ? drawAreas(camera, w, h) : []));
  }

  $("live").addEventListener("load", () => {
    const [w, h] = pictureSize($("live"));
    if ($("live-overlay").getAttribute("viewBox") !== "0 0 " + w + " " + h) renderOverlay();
  });

  // ---- the editor ----------------------------------------------------------------------------

  function kind() {
    const value = $("editor-kind").value;
    return value === "line" || value === "mask" || value === "privacy" ? value : "zone";
  }

  // Drawn as a polygon and finished by a click on "Finish" (or by saving): zones and masks.
  function isPolygon() {
    return kind() !== "line";
  }

  function showErrors(messages) {
    $("editor-errors").replaceChildren(...messages.map((text) => el("li", text)));
  }

  function showResult(text) {
    $("editor-result").textContent = text;
  }

  function renderCanvas() {
    const svg = $("editor-canvas");
    const camera = editor.camera ? app.cameraConfig(editor.camera) : null;
    const [w, h] = pictureSize($("editor-snapshot"));
    fitSvg(svg, w, h);
    const nodes = camera ? drawAreas(camera, w, h) : [];
    for (const node of nodes) node.setAttribute("class", node.getAttribute("class") + " existing");
    const points = editor.points;
    if (kind() === "line" && points.length === 2) {
      nodes.push(lineShape({ name: $("editor-name").value, points }, w, h, { "data-drawing": "line" }));
    } else if (points.length) {
      const tag = editor.finished ? "polygon" : "polyline";
      nodes.push(svgEl(tag, { points: pointsAttribute(points, w, h), "data-drawing": kind() }, "drawing"));
    }
    const radius = Math.max(4, Math.min(w, h) / 120);
    for (const p of points) {
      const [x, y] = L.toPixel(p, w, h);
      nodes.push(svgEl("circle", { cx: x, cy: y, r: radius }, "drawing-point"));
    }
    svg.replaceChildren(...nodes);
  }

  function renderAreaList() {
    const camera = editor.camera ? app.cameraConfig(editor.camera) : null;
    const items = L.cameraAreas(camera).map((area) => {
      const li = el("li");
      li.dataset.area = area.name;
      li.dataset.kind = area.kind;
      const remove = el("button", "Delete", "secondary delete");
      remove.type = "button";
      remove.addEventListener("click", () => removeArea(area).catch(app.handleError));
      let labels = area.kind === "mask" ? "motion does not count here"
        : area.kind === "privacy" ? (area.style === "blur" ? "blurred" : "blacked out") + " in everything sent or recorded"
          : area.labels.length ? area.labels.join(", ") : "every label";
      const key = { zone: "zones", line: "lines" }[area.kind];
      const own = key ? (camera[key] || []).find((a) => a.name === area.name) : null;
      if (own && own.speed && L.speedSummary) labels += " · " + L.speedSummary(own);
      const title = area.kind === "mask" ? "motion " + area.name : area.kind === "privacy" ? area.name
        : area.kind + " " + area.name;
      const rules = own && area.kind === "zone" ? Z.zoneRulesText(own) : "";
      li.append(el("span", title, "area-title"), el("span", " · " + labels + (rules ? " · " + rules : "") + " ", "muted"));
      if (area.kind === "privacy") li.append(editButton(area));
      li.append(remove);
      return li;
    });
    $("editor-areas").replaceChildren(...items);
    $("editor-areas-empty").hidden = items.length > 0 || !camera;
  }

  // Loads a privacy mask into the drawing: points can then be placed anew, or its style changed,
  // and saving puts it back in its place.
  function editButton(area) {
    const button = el("button", "Edit", "secondary edit");
    button.type = "button";
    button.addEventListener("click", () => {
      $("editor-kind").value = "privacy";
      showStyle();
      $("editor-style").value = area.style;
      editor.points = area.points.map((p) => [p[0], p[1]]);
      editor.finished = true;
      editor.editing = area.name;
      showErrors([]);
      showResult("editing " + area.name + ": click to draw it anew, or change its style, then save");
      renderCanvas();
    });
    return button;
  }

  function showStyle() {
    $("editor-style-label").hidden = kind() !== "privacy";
  }

  function clearDrawing() {
    $("editor-zone-rules").hidden = kind() !== "zone";
    editor.points = [];
    editor.finished = false;
    editor.editing = "";
    showStyle();
    showErrors([]);
    renderCanvas();
  }

  function setSnapshot(url) {
    const img = $("editor-snapshot");
    const old = editor.url;
    editor.url = url;
    if (url) img.src = url;
    else img.removeAttribute("src");
    if (old && old.startsWith("blob:")) URL.revokeObjectURL(old);
  }

  async function loadSnapshot() {
    const id = editor.camera, generation = ++editor.generation;
    if (!id) {
      setSnapshot(null);
      $("editor-note").textContent = "";
      return;
    }
    // A camera without a frame would answer 503: it gets a blank picture to draw on instead.
    if (!app.hasFrames(id)) {
      setSnapshot(NO_FRAME);
      $("editor-note").textContent = "Camera " + id + " has no frame yet; the picture is a blank stand-in.";
      return;
    }
    const picture = await app.fetchImage(app.cameraPath(id, "snapshot.jpg") + "?annotate=0");
    if (generation !== editor.generation) return;
    if (picture.blob) {
      setSnapshot(URL.createObjectURL(picture.blob));
      $("editor-note").textContent = "";
    } else {
      setSnapshot(NO_FRAME);
      $("editor-note").textContent = picture.error || "Could not load a snapshot (HTTP " + picture.status + ").";
    }
  }

  function pickCamera(id) {
    editor.camera = id;
    clearDrawing();
    showResult("");
    renderAreaList();
    loadSnapshot().catch(app.handleError);
  }

  function addPoint(event) {
    if (!editor.camera) {
      showErrors(["Pick a camera first."]);
      return;
    }
    const point = L.clickToNormalised(event.clientX, event.clientY, $("editor-canvas").getBoundingClientRect());
    if (!point) return;
    // A complete line or a finished zone starts over: the next click begins a new drawing.
    if ((kind() === "line" && editor.points.length >= 2) || editor.finished) {
      // an edited privacy mask keeps its place: only its points start over
      editor.points = [];
      editor.finished = false;
    }
    editor.points.push(point);
    showErrors([]);
    showResult("");
    renderCanvas();
  }

  function finish() {
    if (isPolygon() && editor.points.length >= 3) {
      editor.finished = true;
      showErrors([]);
      renderCanvas();
    } else {
      showErrors([L.drawingProblem(kind(), editor.points, false)]);
    }
  }

  async function patchCamera(id, body) {
    return app.api("api/v1/cameras/" + encodeURIComponent(id), {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  async function save() {
    const camera = editor.camera ? app.cameraConfig(editor.camera) : null;
    if (!camera) {
      showErrors(["Pick a camera first."]);
      return;
    }
    // Two or more points of a zone are finished by saving it.
    if (isPolygon() && editor.points.length >= 3) editor.finished = true;
    const problem = L.drawingProblem(kind(), editor.points, editor.finished);
    if (problem) {
      showErrors([problem]);
      return;
    }
    const area = L.buildArea(kind(), $("editor-name").value, editor.points, $("editor-labels").value,
      $("editor-style").value);
    if (kind() === "zone") Object.assign(area, Z.zoneRules($("editor-loitering").value, $("editor-max-objects").value));
    const speed = app.areaSpeed ? app.areaSpeed(kind()) : null;  // speed.js
    if (speed) area.speed = speed;
    const replacing = kind() === "privacy" ? editor.editing : "";
    $("editor-save").disabled = true;
    try {
      const result = await patchCamera(camera.id, L.areaPatch(camera, kind(), area, replacing));
      if (result.ok) {
        editor.points = [];
        editor.finished = false;
        editor.editing = "";
        $("editor-name").value = "";
        $("editor-loitering").value = $("editor-max-objects").value = "";
        if (app.clearSpeed) app.clearSpeed();  // speed.js
        await app.reloadConfig();  // before saying so: the list and the overlays show it then
        showErrors([]);
        showResult(kind() === "mask" ? "saved the motion mask" : kind() === "privacy"
          ? "saved the privacy mask" : "saved " + kind() + " " + area.name);
      } else {
        showErrors(L.problemMessages(result.status, result.body));
      }
    } finally {
      $("editor-save").disabled = false;
    }
  }

  async function removeArea(area) {
    const camera = app.cameraConfig(editor.camera);
    if (!camera) return;
    const result = await patchCamera(camera.id, L.areaRemovalPatch(camera, area.kind, area.name));
    if (result.ok) {
      await app.reloadConfig();
      showErrors([]);
      showResult("deleted " + (area.kind === "mask" ? "motion " : area.kind === "privacy" ? "" : area.kind + " ")
        + area.name);
    } else {
      showErrors(L.problemMessages(result.status, result.body));
    }
  }

  $("editor-camera").addEventListener("change", () => pickCamera($("editor-camera").value));
  $("editor-kind").addEventListener("change", clearDrawing);
  $("editor-canvas").addEventListener("click", addPoint);
  $("editor-finish").addEventListener("click", finish);
  $("editor-clear").addEventListener("click", clearDrawing);
  $("editor-save").addEventListener("click", () => save().catch(app.handleError));
  $("editor-refresh").addEventListener("click", () => loadSnapshot().catch(app.handleError));
  $("editor-name").addEventListener("input", renderCanvas);
  $("editor-style").addEventListener("change", renderCanvas);
  $("editor-snapshot").addEventListener("load", renderCanvas);

  function onConfig(config) {
    const ids = (config.cameras || []).map((cam) => cam.id);
    app.setOptions($("editor-camera"), [{ value: "", text: "pick a camera" }].concat(ids.map((id) => ({ value: id, text: id }))));
    if (editor.camera && !ids.includes(editor.camera)) {
      pickCamera(ids.length === 1 ? ids[0] : "");
    } else if (!editor.camera && ids.length === 1) {
      // With one camera there is nothing to pick: the editor shows it at once.
      $("editor-camera").value = ids[0];
      pickCamera(ids[0]);
    } else {
      renderAreaList();
      renderCanvas();
    }
    renderOverlay();
  }

  // The live grid draws each tile's areas with the same shapes.
  Object.assign(app, { areaShapes: drawAreas, fitSvg });
  // A camera picked before its first frame got the stand-in: its picture comes once it has one.
  function onCameras() {
    if (editor.url === NO_FRAME && app.hasFrames(editor.camera)) loadSnapshot().catch(app.handleError);
  }

  return { config: onConfig, live: renderOverlay, cameras: onCameras };
});
