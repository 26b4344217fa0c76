// Pure functions of the dashboard: no DOM, no network. The page's other scripts use them through
// globalThis.EdgeLogic, and the tests call them directly in Node.
"use strict";

(function () {
  const AREA_KEY = { zone: "zones", line: "lines" };  // the editor's kinds -> camera config keys
  const MASK_NAME = "mask ";  // motion masks have no name in the configuration: "mask 1" is the first
  const PRIVACY_NAME = "privacy mask ";  // nor have privacy masks (cameras[].privacy.masks)
  const POINT_DIGITS = 4;  // 1/10000 of the frame: finer than any camera's pixels

  function clamp01(value) {
    return Math.min(1, Math.max(0, value));
  }

  function round(value, digits) {
    const scale = Math.pow(10, digits);
    return Math.round(value * scale) / scale;
  }

  // A normalised point [x, y] (fractions of the frame, y down) in pixels of a w×h picture.
  function toPixel(point, width, height) {
    return [point[0] * width, point[1] * height];
  }

  // Pixels of a w×h picture as a normalised point, kept inside the frame and rounded.
  function toNormalised(px, py, width, height) {
    if (!(width > 0 && height > 0)) return null;
    return [round(clamp01(px / width), POINT_DIGITS), round(clamp01(py / height), POINT_DIGITS)];
  }

  // A click at (clientX, clientY) on an element whose box is `rect` (getBoundingClientRect).
  function clickToNormalised(clientX, clientY, rect) {
    return toNormalised(clientX - rect.left, clientY - rect.top, rect.width, rect.height);
  }

  // "car, person ,,car" -> ["car", "person"]: the labels of an area, empty meaning every label.
  function parseLabels(text) {
    const labels = [];
    for (const part of String(text || "").split(",")) {
      const label = part.trim();
      if (label && !labels.includes(label)) labels.push(label);
    }
    return labels;
  }

  // The zone, line, motion or privacy mask being drawn, as the configuration holds it (a motion
  // mask: {polygon}; a privacy mask: {polygon, style}).
  function buildArea(kind, name, points, labelsText, style) {
    if (kind === "mask") return { polygon: points.map((p) => [p[0], p[1]]) };
    if (kind === "privacy") return { polygon: points.map((p) => [p[0], p[1]]), style: style === "blur" ? "blur" : "black" };
    const area = { name: String(name || "").trim() };
    area[kind === "line" ? "points" : "polygon"] = points.map((p) => [p[0], p[1]]);
    area.labels = parseLabels(labelsText);
    return area;
  }

  // What the drawing still lacks before it can be saved, or "" when it is complete. The name and
  // labels are left to the API, whose answer names the field.
  function drawingProblem(kind, points, finished) {
    if (kind === "line") {
      return points.length === 2 ? "" : "A line needs 2 points: click where it starts (P1), then where it ends (P2).";
    }
    const what = kind === "mask" ? "motion mask" : kind === "privacy" ? "privacy mask" : "zone";
    if (points.length < 3) return "A " + what + " needs at least 3 points.";
    return finished ? "" : "Finish the " + what + " first.";
  }

  // The PATCH /api/v1/cameras/<id> body that appends `area` to its list (a privacy mask with
  // `replacing` set takes that one's place); the whole list, as a merge patch replaces lists.
  function areaPatch(camera, kind, area, replacing) {
    if (kind === "privacy") {
      const index = replacing ? privacyIndex(replacing) : -1;
      const masks = privacyMasks(camera);
      return { privacy: { masks: index >= 0 && index < masks.length ? masks.map((m, i) => (i === index ? area : m))
        : masks.concat([area]) } };
    }
    if (kind === "mask") return { motion: { masks: cameraMasks(camera).concat([area.polygon]) } };
    const key = AREA_KEY[kind];
    return { [key]: (camera[key] || []).concat([area]) };
  }

  // The PATCH body that removes the zone or line called `name` from the camera.
  function areaRemovalPatch(camera, kind, name) {
    if (kind === "privacy") {
      const index = privacyIndex(name);
      return { privacy: { masks: privacyMasks(camera).filter((_, i) => i !== index) } };
    }
    if (kind === "mask") {
      const index = Number(String(name).slice(MASK_NAME.length)) - 1;
      return { motion: { masks: cameraMasks(camera).filter((_, i) => i !== index) } };
    }
    const key = AREA_KEY[kind];
    return { [key]: (camera[key] || []).filter((area) => area.name !== name) };
  }

  function privacyIndex(name) {
    return Number(String(name).slice(PRIVACY_NAME.length)) - 1;
  }

  function privacyMasks(camera) {
    return (camera && camera.privacy && camera.privacy.masks) || [];
  }

  function cameraMasks(camera) {
    return (camera && camera.motion && camera.motion.masks) || [];
  }

  // Every zone, line and motion mask of a camera, as {kind, name, points, labels}, zones first;
  // masks are named by their place in the list ("mask 1").
  function cameraAreas(camera) {
    const zones = (camera && camera.zones || []).map((z) => ({ kind: "zone", name: z.name, points: z.polygon, labels: z.labels || [] }));
    const lines = (camera && camera.lines || []).map((l) => ({ kind: "line", name: l.name, points: l.points, labels: l.labels || [] }));
    const masks = cameraMasks(camera).map((polygon, i) => ({ kind: "mask", name: MASK_NAME + (i + 1), points: polygon, labels: [] }));
    const privacy = privacyMasks(camera).map((m, i) => ({ kind: "privacy", name: PRIVACY_NAME + (i + 1), points: m.polygon,
      labels: [], style: m.style || "black" }));
    return zones.concat(lines, masks, privacy);
  }

  // The messages of a refused request: one per problem ("loc: msg"), else its error sentence, else
  // the HTTP status; a message that names its field itself is not prefixed twice.
  function problemMessages(status, body) {
    const details = body && Array.isArray(body.details) ? body.details : [];
    if (details.length) {
      return details.map((d) => (d.loc && !String(d.msg).startsWith(d.loc + ".") ? d.loc + ": " : "") + d.msg);
    }
    if (body && body.error) return [String(body.error)];
    return ["The request failed (HTTP " + status + ")."];
  }

  // GET /api/v1/events with the filters that are set; "" means every value.
  function eventsQuery(filters, limit, offset) {
    const params = [];
    for (const name of ["camera", "label", "zone"]) {
      const value = filters && filters[name];
      if (value) params.push(name + "=" + encodeURIComponent(value));
    }
    if (limit) params.push("limit=" + encodeURIComponent(limit));
    if (offset) params.push("offset=" + encodeURIComponent(offset));
    return "api/v1/events" + (params.length ? "?" + params.join("&") : "");
  }

  // What decides whether an event's snapshot has to be fetched again.
  function snapshotKey(event) {
    return [event.id, event.has_snapshot, event.top_score, event.end_time].join("|");
  }

  // What an event is, in a few words: its label, or what its zone noticed (loitering, occupancy).
  function eventTitle(event) {
    if (event.type === "loitering") return event.label + " loitering";
    const occupancy = event.type === "occupancy" ? event.occupancy : null;
    if (occupancy) return event.label + " occupancy " + occupancy.peak_objects + " > " + occupancy.max_objects;
    return event.label;
  }

  // The rows of the counts view from GET /api/v1/counts, sorted, each with a stable key.
  function countRows(counts) {
    const rows = { cameras: [], zones: [], lines: [] };
    const body = counts || {};
    for (const kind of ["cameras", "zones"]) {
      for (const owner of Object.keys(body[kind] || {}).sort()) {
        for (const label of Object.keys(body[kind][owner] || {}).sort()) {
          rows[kind].push({ key: owner + "\u0000" + label, owner, label, count: body[kind][owner][label] });
        }
      }
    }
    for (const line of Object.keys(body.lines || {}).sort()) {
      const totals = body.lines[line] || {};
      rows.lines.push({ key: line, owner: line, in: totals.in, out: totals.out });
    }
    return rows;
  }

  // A line in pixels: P1 -> P2 with a head at P2, and an arrow across its middle to the side a
  // crossing enters to count as "in" (s > 0, docs/configuration.md); positive scaling keeps s's sign.
  function lineGeometry(points, width, height, headPx) {
    const [x1, y1] = toPixel(points[0], width, height);
    const [x2, y2] = toPixel(points[1], width, height);
    const length = Math.hypot(x2 - x1, y2 - y1) || 1;
    const ux = (x2 - x1) / length, uy = (y2 - y1) / length;  // along the line
    const nx = -uy, ny = ux;  // towards s > 0, the "in" side
    const head = headPx || Math.max(8, Math.min(width, height) / 25);  // big enough to see on a tile
    const mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
    const ix = mx + 1.5 * head * nx, iy = my + 1.5 * head * ny;  // the tip of the "in" arrow
    return {
      x1, y1, x2, y2,
      head: [[x2, y2], [x2 - head * ux + head * 0.5 * nx, y2 - head * uy + head * 0.5 * ny],
        [x2 - head * ux - head * 0.5 * nx, y2 - head * uy - head * 0.5 * ny]],
      inFrom: [mx - 1.5 * head * nx, my - 1.5 * head * ny],
      inTo: [ix, iy],
      inHead: [[ix, iy], [ix - 0.8 * head * nx + 0.4 * head * ux, iy - 0.8 * head * ny + 0.4 * head * uy],
        [ix - 0.8 * head * nx - 0.4 * head * ux, iy - 0.8 * head * ny - 0.4 * head * uy]],
      inLabel: [mx + 2.6 * head * nx, my + 2.6 * head * ny],
    };
  }

  // A text field of the camera form as the value to send: numbers as numbers; anything else is
  // sent as typed so that the API's answer names the field.
  function numberField(text) {
    const trimmed = String(text).trim();
    const value = Number(trimmed);
    return trimmed !== "" && Number.isFinite(value) ? value : trimmed;
  }

  const CAMERA_FIELDS = ["source", "enabled", "detect", "fps_limit", "decoder"];
  const CAMERA_DEFAULTS = { enabled: true, detect: true, fps_limit: 0, decoder: "auto" };

  // The PATCH /api/v1/cameras/<id> body from the camera form: only the fields that changed, so an
  // untouched masked source ("***") is never sent back.
  function cameraPatch(camera, form) {
    const patch = {};
    for (const key of CAMERA_FIELDS) {
      if (!(key in form)) continue;
      const before = key in camera ? camera[key] : CAMERA_DEFAULTS[key];
      const after = key === "fps_limit" ? numberField(form[key]) : form[key];
      if (JSON.stringify(before) !== JSON.stringify(after)) patch[key] = after;
    }
    return patch;
  }

  // The camera form's fields for a camera of the configuration.
  function cameraForm(camera) {
    const form = {};
    for (const key of CAMERA_FIELDS) form[key] = key in camera ? camera[key] : CAMERA_DEFAULTS[key];
    form.fps_limit = String(form.fps_limit);
    return form;
  }

  // The options of a filter <select>: "" (every value) first, then the values, sorted, unique.
  function filterOptions(values, allText) {
    const unique = Array.from(new Set(values.filter((v) => typeof v === "string" && v))).sort();
    return [{ value: "", text: allText }].concat(unique.map((v) => ({ value: v, text: v })));
  }

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

  // The camera the live view shows: the one picked while it exists, else the only camera there
  // is. With several, none until one is picked: each view costs the appliance JPEG encodes.
  function cameraToView(current, cameraIds) {
    if (current !== null && cameraIds.includes(current)) return current;
    return cameraIds.length === 1 ? cameraIds[0] : null;
  }

  // Whether a camera's frames go through the model now: its report's detect (the switch after the
  // profile in force), else its stored configuration's (an appliance from before that field).
  function detecting(cam, config) {
    if (cam && typeof cam.detect === "boolean") return cam.detect;
    return (config || {}).detect !== false;
  }

  // The frames a snapshot can show: analysed ones, or of a camera that does not detect its
  // captured ones (the snapshot is then its newest captured frame).
  function pictureCount(cam, config) {
    return (detecting(cam, config) ? cam.frames_analyzed : cam.frames_captured) || 0;
  }

  function fmtTime(seconds) {
    if (typeof seconds !== "number") return "–";
    return new Date(seconds * 1000).toLocaleString();
  }

  // What a camera records by the configuration ({events, continuous}, each camera's own choice
  // before the record section's); null for an appliance whose configuration has no record section.
  function cameraRecording(config, cameraId) {
    const record = config && config.record;
    if (!isObject(record)) return null;
    const camera = ((config.cameras || []).find((cam) => cam.id === cameraId)) || {};
    const own = camera.record || {};
    const pick = (mine, all) => (mine === null || mine === undefined ? all === true : mine === true);
    return { events: pick(own.enabled, (record.events || {}).enabled),
             continuous: pick(own.continuous, (record.continuous || {}).enabled) };
  }

  // Whether the appliance has recordings to ask for: some camera records clips or segments.
  function recordingOn(config) {
    return ((config && config.cameras) || []).some((cam) => {
      const what = cameraRecording(config, cam.id);
      return what !== null && (what.events || what.continuous);
    });
  }

  // The recordings of [fromS, toS] as spans of a timeline: segments less than gapS apart are one
  // span; left and width are fractions of the timeline, start and end Unix seconds.
  function timelineSpans(segments, fromS, toS, gapS) {
    const total = toS - fromS;
    if (!(total > 0)) return [];
    const sorted = segments.map((s) => [Math.max(s.start, fromS), Math.min(s.end, toS)])
      .filter(([start, end]) => end > start).sort((a, b) => a[0] - b[0]);
    const spans = [];
    for (const [start, end] of sorted) {
      const last = spans[spans.length - 1];
      if (last && start - last.end <= gapS) last.end = Math.max(last.end, end);
      else spans.push({ start, end });
    }
    return spans.map((span) => ({ start: span.start, end: span.end, left: round((span.start - fromS) / total, 4),
                                  width: round((span.end - span.start) / total, 4) }));
  }

  // What to play for a click at atS: from there for windowS at most, within the span under it; a
  // click within snapS beside a span (narrower than the cursor) plays it from its start. Null: nothing near.
  function playRange(spans, atS, windowS, snapS) {
    let span = spans.find((s) => s.start <= atS && atS < s.end);
    let from = atS;
    if (!span) {
      const distance = (s) => (atS < s.start ? s.start - atS : atS - s.end);
      span = spans.filter((s) => distance(s) <= snapS).sort((a, b) => distance(a) - distance(b))[0];
      if (!span) return null;
      from = span.start;
    }
    return { from: round(from, 3), to: round(Math.min(span.end, from + windowS), 3) };
  }

  // Review items as marks on the timeline of [fromS, toS]: cut to it, ongoing ones up to toS.
  function timelineMarks(items, fromS, toS) {
    const total = toS - fromS;
    if (!(total > 0)) return [];
    return items.map((item) => ({ item, start: Math.max(item.start_time, fromS),
                                  end: Math.min(typeof item.end_time === "number" ? item.end_time : toS, toS) }))
      .filter((mark) => mark.end >= mark.start && mark.start < toS)
      .map((mark) => ({ id: mark.item.id, severity: mark.item.severity, start: mark.item.start_time,
                        left: round((mark.start - fromS) / total, 4), width: round((mark.end - mark.start) / total, 4) }));
  }

  // A range dragged from aS to bS (either way), as an export: at most maxS from its start.
  function selectionRange(aS, bS, maxS) {
    const from = Math.min(aS, bS), to = Math.max(aS, bS);
    return { from: round(from, 3), to: round(Math.min(to, from + maxS), 3), cut: to - from > maxS };
  }

  // Where box labels go so that none hides another: each ({x1, y1, x2, y2} of its box, w and h of
  // its text, in pixels) is tried above its box, inside its top, under it, then further off in steps
  // of its height; the first place clear of the labels before it wins (best scores come first).
  // Returns [{x, y, w, h}] (top left), in the order given.
  function placeLabels(labels, width, height) {
    const placed = [];
    const overlaps = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    return labels.map((label) => {
      const x = Math.max(0, Math.min(label.x1, width - label.w));
      const tries = label.y1 >= label.h ? [label.y1 - label.h, label.y1, label.y2] : [label.y1, label.y2];
      for (let step = 1; step <= labels.length; step++) tries.push(label.y2 + step * label.h, label.y1 - (step + 1) * label.h);
      const fits = tries.map((y) => ({ x, y: Math.max(0, Math.min(y, height - label.h)), w: label.w, h: label.h }));
      const spot = fits.find((rect) => !placed.some((other) => overlaps(rect, other))) || fits[0];
      placed.push(spot);
      return spot;
    });
  }

  // The box of a track ([[t_s, x1, y1, x2, y2], ...], oldest first) at t_s: between two kept
  // boxes it moves in a straight line; within holdS of the first or last it stays there; null
  // before or after that (the clip shows the time before and after its event).
  function trackBoxAt(points, tS, holdS) {
    if (!points.length || tS < points[0][0] - holdS || tS > points[points.length - 1][0] + holdS) return null;
    const next = points.findIndex((p) => p[0] > tS);
    if (next <= 0) return (next === 0 ? points[0] : points[points.length - 1]).slice(1);
    const [a, b] = [points[next - 1], points[next]];
    const k = (tS - a[0]) / Math.max(1e-6, b[0] - a[0]);
    return [1, 2, 3, 4].map((i) => round(a[i] + (b[i] - a[i]) * k, 4));
  }

  globalThis.EdgeLogic = {
    toPixel, toNormalised, clickToNormalised, parseLabels, buildArea, drawingProblem, areaPatch,
    areaRemovalPatch, cameraAreas, problemMessages, eventsQuery, snapshotKey, countRows, lineGeometry,
    numberField, cameraPatch, cameraForm, filterOptions, fmtTime, isObject, mergeDiff,
    cameraToView, detecting, pictureCount, timelineSpans, playRange, cameraRecording, recordingOn, timelineMarks, selectionRange,
    placeLabels, trackBoxAt, eventTitle,
  };
})();
