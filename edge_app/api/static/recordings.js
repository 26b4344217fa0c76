// The recordings of the camera in the live view: a timeline of its last 24 hours (zoomable to an
// hour, and moved earlier or later) with its review items marked, and a player. A click plays
// from that time (an export of up to PLAY_S from there, by stream copy, signed); a range dragged
// across the timeline is exported (played, and offered as a download). The keyboard can do both.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function recordings(app) {
  const L = globalThis.EdgeLogic;
  const { $, el } = app;
  const PLAY_S = 600;  // what one click plays at most (an export spans at most an hour)
  const EXPORT_MAX_S = 3600;  // the export route's longest range
  const GAP_S = 2;  // segments closer than this are one span on the timeline
  const SNAP_PX = 6;  // a click this close to a span plays it
  const DRAG_PX = 5;  // a press that moves further than this selects a range instead of clicking
  const MARK_PAGES = 4;  // review pages (50 items each) read for the marks of one window
  const REFRESH_EVERY_TICKS = 15;  // the page polls every 2 s; the timeline every 30 s

  const timeline = $("rec-timeline");
  const player = app.signedPlayer($("rec-video"), $("rec-note"));
  let camera = null;
  let spans = [];
  let marks = [];
  let window_ = { from: 0, to: 0 };
  let endS = null;  // the end of the window shown; null: now, following the clock
  let playing = null;  // {camera, from, to} of what plays
  let press = null;  // {x, atS} of a press on the timeline, and its selection once dragged
  let selection = null;  // {from, to} dragged
  let keyS = null;  // the keyboard's cursor: a time in the window, shown while the timeline has focus
  let keyAnchorS = null;  // where a Shift+arrow selection started
  let generation = 0;

  function exportQuery(range) {
    return "camera=" + encodeURIComponent(range.camera) + "&from=" + range.from + "&to=" + range.to;
  }

  function fraction(s) {
    return (s - window_.from) / Math.max(1, window_.to - window_.from);
  }

  function bar(className, fromS, toS, title) {
    const node = el("div", null, className);
    node.style.left = (Math.max(0, fraction(fromS)) * 100) + "%";
    node.style.width = (Math.max(0, fraction(toS) - Math.max(0, fraction(fromS))) * 100) + "%";
    if (title) node.title = title;
    return node;
  }

  function render() {
    const nodes = spans.map((span) => bar("span", span.start, span.end, L.fmtTime(span.start) + " → " + L.fmtTime(span.end)));
    for (const mark of marks) {
      const node = el("div", null, "mark " + mark.severity);
      node.style.left = (mark.left * 100) + "%";
      node.style.width = (mark.width * 100) + "%";
      node.dataset.id = mark.id;
      node.title = mark.severity + " " + mark.labels + " at " + L.fmtTime(mark.start);
      nodes.push(node);
    }
    if (selection) nodes.push(bar("selection", selection.from, selection.to));
    if (keyS !== null && window_.to) {
      const key = el("div", null, "key-cursor");
      key.style.left = (fraction(keyS) * 100) + "%";
      nodes.push(key);
      timeline.setAttribute("aria-valuetext", L.fmtTime(keyS) + (selection ? ", selected from " +
        L.fmtTime(selection.from) + " to " + L.fmtTime(selection.to) : ""));
    } else {
      timeline.removeAttribute("aria-valuetext");
    }
    if (playing && playing.camera === camera && playing.from >= window_.from && playing.from <= window_.to) {
      const cursor = el("div", null, "cursor");
      cursor.style.left = (fraction(playing.from) * 100) + "%";
      nodes.push(cursor);
    }
    timeline.replaceChildren(...nodes);
    timeline.dataset.spans = String(spans.length);
    timeline.dataset.marks = String(marks.length);
    timeline.dataset.from = String(window_.from);
    timeline.dataset.to = String(window_.to);
    const scale = [window_.from, (window_.from + window_.to) / 2, window_.to];
    $("rec-scale").replaceChildren(...scale.map((s) => el("span", window_.to ? L.fmtTime(s) : "")));
    $("rec-later").disabled = endS === null;
  }

  // Asked only while the appliance records something: otherwise there is nothing to list, and
  // the card says so instead of asking.
  function recordingNote() {
    if (L.recordingOn(app.config())) return null;
    return "Nothing is recorded on this appliance (record in the configuration).";
  }

  // The review items of the camera that start in the window (newest first, a few pages at most).
  async function reviewItems(fromS, toS) {
    const found = [];
    for (let page = 1; page <= MARK_PAGES; page++) {
      const result = await app.api("api/v1/review?camera=" + encodeURIComponent(camera) + "&page=" + page);
      if (!result.ok || !result.body) break;
      const items = result.body.items || [];
      found.push(...items.filter((item) => item.start_time < toS));
      if (!items.length || items[items.length - 1].start_time < fromS || page >= (result.body.pages || 0)) break;
    }
    return found;
  }

  async function refresh() {
    if (!camera) return;
    const off = recordingNote();
    if (off) {
      spans = [];
      marks = [];
      $("rec-note").textContent = off;
      render();
      return;
    }
    const wanted = ++generation;
    const lengthS = Number($("rec-zoom").value);
    const toS = endS === null ? Math.floor(Date.now() / 1000) : endS, fromS = toS - lengthS;
    const [result, items] = await Promise.all([
      app.api("api/v1/recordings?camera=" + encodeURIComponent(camera) + "&from=" + fromS + "&to=" + toS),
      reviewItems(fromS, toS)]);
    if (wanted !== generation) return;
    window_ = { from: fromS, to: toS };
    marks = L.timelineMarks(items, fromS, toS).map((mark, i) => Object.assign(mark, { labels: (items[i].labels || []).join(", ") }));
    if (!result.ok || !result.body) {
      spans = [];
      $("rec-note").textContent = L.problemMessages(result.status, result.body).join(" ");
    } else {
      spans = L.timelineSpans(result.body.segments || [], fromS, toS, GAP_S);
      if (!playing) $("rec-note").textContent = spans.length ? "" : "No recordings of this camera in this window.";
    }
    render();
  }

  function setCamera(cameraId) {
    if (cameraId === camera) return;
    camera = cameraId;
    spans = [];
    marks = [];
    selection = null;
    playing = null;
    player.stop();
    $("rec-download").hidden = true;
    $("rec-playing").textContent = "";
    $("rec-name").textContent = cameraId ? cameraId : "(pick a camera)";
    $("rec-note").textContent = "";
    render();
    refresh().catch(app.handleError);
  }

  async function play(range, what) {
    playing = Object.assign({ camera }, range);
    render();
    $("rec-playing").textContent = what + camera + " from " + L.fmtTime(range.from) + " to " + L.fmtTime(range.to);
    const ok = await player.load("api/v1/recordings/export-url?" + exportQuery(playing));
    $("rec-download").hidden = !ok;
    if (ok) $("rec-video").play().catch(() => {});  // a browser may refuse to start without a gesture; the controls remain
  }

  async function playAt(atS, snapS) {
    const range = L.playRange(spans, atS, PLAY_S, snapS);
    if (!range || !camera) {
      $("rec-note").textContent = "Nothing recorded at or after " + L.fmtTime(atS) + ".";
      return;
    }
    selection = null;
    await play(range, "");
  }

  async function exportSelection() {
    if (!selection || !camera) return;
    $("rec-note").textContent = selection.cut ? "An export spans at most an hour: the selection is cut to its first hour." : "";
    await play(selection, "Selection: ");
  }

  function timeAt(clientX) {
    const rect = timeline.getBoundingClientRect();
    const at = Math.min(1, Math.max(0, (clientX - rect.left) / Math.max(1, rect.width)));
    return window_.from + at * (window_.to - window_.from);
  }

  timeline.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || !window_.to) return;
    press = { x: event.clientX, atS: timeAt(event.clientX), dragged: false };
    timeline.setPointerCapture(event.pointerId);
  });
  timeline.addEventListener("pointermove", (event) => {
    if (!press || (!press.dragged && Math.abs(event.clientX - press.x) < DRAG_PX)) return;
    press.dragged = true;
    selection = L.selectionRange(press.atS, timeAt(event.clientX), EXPORT_MAX_S);
    render();
  });
  timeline.addEventListener("pointerup", (event) => {
    const was = press;
    press = null;
    if (!was) return;
    if (was.dragged) {
      selection = L.selectionRange(was.atS, timeAt(event.clientX), EXPORT_MAX_S);
      exportSelection().catch(app.handleError);
      return;
    }
    const secondsPerPixel = (window_.to - window_.from) / Math.max(1, timeline.getBoundingClientRect().width);
    playAt(timeAt(event.clientX), SNAP_PX * secondsPerPixel).catch(app.handleError);
  });
  timeline.addEventListener("pointercancel", () => { press = null; });
  // The keyboard does what the pointer does: arrows move a cursor (a 60th of the window; with
  // Shift they select from where the selection started), Home and End jump to the window's
  // ends, Page Up and Page Down show earlier and later recordings, Enter or Space plays from the
  // cursor, or exports the selection, and Escape drops the selection.
  timeline.addEventListener("keydown", (event) => {
    if (!window_.to || event.ctrlKey || event.metaKey || event.altKey) return;
    const stepS = (window_.to - window_.from) / 60;
    const at = keyS === null ? (playing && playing.camera === camera ? playing.from : window_.to - stepS) : keyS;
    const moves = { ArrowLeft: at - stepS, ArrowRight: at + stepS, Home: window_.from, End: window_.to };
    if (event.key in moves) {
      keyS = Math.min(window_.to, Math.max(window_.from, moves[event.key]));
      if (event.shiftKey) {
        if (keyAnchorS === null) keyAnchorS = at;
        selection = L.selectionRange(keyAnchorS, keyS, EXPORT_MAX_S);
      } else {  // a plain move leaves the selection, as a click does
        keyAnchorS = null;
        selection = null;
      }
      render();
    } else if (event.key === "PageUp" || event.key === "PageDown") {
      $(event.key === "PageUp" ? "rec-earlier" : "rec-later").click();
    } else if (event.key === "Enter" || event.key === " ") {
      keyAnchorS = null;
      if (selection && selection.to > selection.from) exportSelection().catch(app.handleError);
      else playAt(at, 2 * stepS).catch(app.handleError);
    } else if (event.key === "Escape" && selection) {
      selection = null;
      keyAnchorS = null;
      render();
    } else {
      return;
    }
    event.preventDefault();
  });
  timeline.addEventListener("blur", () => {
    keyS = null;
    keyAnchorS = null;
    render();
  });
  $("rec-zoom").addEventListener("change", () => {
    // Zoomed around what plays; with nothing playing the window keeps its end (now, at first).
    if (playing && playing.camera === camera) {
      const endAt = playing.from + Number($("rec-zoom").value) / 2;
      endS = endAt < Date.now() / 1000 ? Math.floor(endAt) : null;
    }
    refresh().catch(app.handleError);
  });
  for (const [id, sign] of [["rec-earlier", -1], ["rec-later", 1]]) {
    $(id).addEventListener("click", () => {
      const lengthS = Number($("rec-zoom").value), nowS = Math.floor(Date.now() / 1000);
      const next = (endS === null ? nowS : endS) + sign * lengthS / 2;
      endS = next >= nowS ? null : Math.floor(next);
      refresh().catch(app.handleError);
    });
  }
  $("rec-download").addEventListener("click", () => {
    if (playing) player.download(playing.camera + "-" + Math.floor(playing.from) + "-" + Math.floor(playing.to) + ".mp4").catch(app.handleError);
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
