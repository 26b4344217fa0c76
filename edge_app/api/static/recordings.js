// The recordings of the camera in the live view: a timeline of its last 24 hours, and a player
// for the time clicked on it (an export of up to PLAY_S from there, by stream copy, signed).
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function recordings(app) {
  const L = globalThis.EdgeLogic;
  const { $, el } = app;
  const DAY_S = 86400;
  const PLAY_S = 600;  // what one click plays at most (an export spans at most an hour)
  const GAP_S = 2;
  const SNAP_PX = 6;  // a click this close to a span plays it  // segments closer than this are one span on the timeline
  const REFRESH_EVERY_TICKS = 15;  // the page polls every 2 s; the timeline every 30 s

  const player = app.signedPlayer($("rec-video"), $("rec-note"));
  let camera = null;
  let spans = [];
  let window_ = { from: 0, to: 0 };
  let playing = null;  // {camera, from, to} of what plays
  let generation = 0;

  function exportQuery(range) {
    return "camera=" + encodeURIComponent(range.camera) + "&from=" + range.from + "&to=" + range.to;
  }

  function render() {
    const nodes = spans.map((span) => {
      const node = el("div", null, "span");
      node.style.left = (span.left * 100) + "%";
      node.style.width = (span.width * 100) + "%";
      node.title = L.fmtTime(span.start) + " → " + L.fmtTime(span.end);
      return node;
    });
    if (playing && playing.camera === camera && playing.from >= window_.from) {
      const cursor = el("div", null, "cursor");
      cursor.style.left = ((playing.from - window_.from) / (window_.to - window_.from) * 100) + "%";
      nodes.push(cursor);
    }
    $("rec-timeline").replaceChildren(...nodes);
    $("rec-timeline").dataset.spans = String(spans.length);
  }

  // Asked only while the appliance records something: otherwise there is nothing to list, and
  // the card says so instead of asking.
  function recordingNote() {
    if (L.recordingOn(app.config())) return null;
    return "Nothing is recorded on this appliance (record in the configuration).";
  }

  async function refresh() {
    if (!camera) return;
    const off = recordingNote();
    if (off) {
      spans = [];
      $("rec-note").textContent = off;
      render();
      return;
    }
    const wanted = ++generation;
    const toS = Math.floor(Date.now() / 1000), fromS = toS - DAY_S;
    const result = await app.api("api/v1/recordings?camera=" + encodeURIComponent(camera) + "&from=" + fromS + "&to=" + toS);
    if (wanted !== generation) return;
    window_ = { from: fromS, to: toS };
    if (!result.ok || !result.body) {
      spans = [];
      $("rec-note").textContent = L.problemMessages(result.status, result.body).join(" ");
    } else {
      spans = L.timelineSpans(result.body.segments || [], fromS, toS, GAP_S);
      if (!playing) $("rec-note").textContent = spans.length ? "" : "No recordings of this camera in the last 24 hours.";
    }
    render();
  }

  function setCamera(cameraId) {
    if (cameraId === camera) return;
    camera = cameraId;
    spans = [];
    playing = null;
    player.stop();
    $("rec-download").hidden = true;
    $("rec-playing").textContent = "";
    $("rec-name").textContent = cameraId ? cameraId : "(pick a camera)";
    $("rec-note").textContent = "";
    render();
    refresh().catch(app.handleError);
  }

  async function playAt(atS, snapS) {
    const range = L.playRange(spans, atS, PLAY_S, snapS);
    if (!range || !camera) {
      $("rec-note").textContent = "Nothing recorded at or after " + L.fmtTime(atS) + ".";
      return;
    }
    playing = Object.assign({ camera }, range);
    render();
    $("rec-playing").textContent = camera + " from " + L.fmtTime(range.from) + " to " + L.fmtTime(range.to);
    const ok = await player.load("api/v1/recordings/export-url?" + exportQuery(playing));
    $("rec-download").hidden = !ok;
    if (ok) $("rec-video").play().catch(() => {});  // a browser may refuse to start without a gesture; the controls remain
  }

  $("rec-timeline").addEventListener("click", (event) => {
    const rect = $("rec-timeline").getBoundingClientRect();
    const fraction = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
    const secondsPerPixel = (window_.to - window_.from) / Math.max(1, rect.width);
    playAt(window_.from + fraction * (window_.to - window_.from), SNAP_PX * secondsPerPixel).catch(app.handleError);
  });
  $("rec-download").addEventListener("click", () => {
    if (playing) player.download(playing.camera + "-" + Math.floor(playing.from) + ".mp4").catch(app.handleError);
  });

  return {
    live: setCamera,
    config() {
      if (camera) refresh().catch(app.handleError);
    },
    stop() {
      setCamera(null);
    },
    poll(tick) {
      return tick % REFRESH_EVERY_TICKS === 1 ? refresh() : Promise.resolve();
    },
  };
});
