// The events view (newest first, with snapshots, filters and delete) and the live counts.
// Cards and rows are updated in place between refreshes, so nothing flickers and a loaded
// thumbnail is fetched again only when its event got a better snapshot.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function events(app) {
  const L = globalThis.EdgeLogic;
  const { $, el } = app;
  const EVENTS_EVERY_TICKS = 2;  // the page polls every 2 s; events every 4 s
  const EVENTS_LIMIT = 50;  // a page; "More" shows one more
  const MAX_LIMIT = 500;  // the most one request answers
  let shown = EVENTS_LIMIT;
  // Shown for an event without a snapshot: a picture of its own, so every card looks alike.
  const NO_SNAPSHOT = "data:image/svg+xml," + encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="90"><rect width="160" height="90" fill="#2a2f3a"/>' +
    '<text x="80" y="50" fill="#aab" font-family="sans-serif" font-size="12" text-anchor="middle">no snapshot</text></svg>');

  const cards = new Map();  // event id -> {node, parts, key, url, blob}
  const countRowsByKey = { cameras: new Map(), zones: new Map(), lines: new Map() };
  const seen = { labels: new Set(), zones: new Set() };  // offered as filters once seen
  let generation = 0;  // bumped when the filters change, so an older answer is dropped
  let viewerUrl = null;
  // The event's clip in the viewer, when it has one; the snapshot is its poster.
  const clipPlayer = app.signedPlayer($("event-video"), $("event-clip-note"));
  const overlay = app.trackOverlay($("event-video"), $("event-overlay"), $("event-boxes"));
  let viewerEventId = null;
  // A clip longer than record.events.max_s comes in parts; the viewer plays them in order.
  let clipPart = 0;
  let clipParts = 1;

  function filters() {
    return { camera: $("event-camera").value, label: $("event-label").value, zone: $("event-zone").value };
  }

  function updateFilterOptions() {
    const config = app.config() || {};
    const cameras = (config.cameras || []).map((cam) => cam.id);
    const zones = Array.from(seen.zones);
    for (const cam of config.cameras || []) for (const zone of cam.zones || []) zones.push(zone.name);
    app.setOptions($("event-camera"), L.filterOptions(cameras, "every camera"));
    app.setOptions($("event-label"), L.filterOptions(Array.from(seen.labels), "every label"));
    app.setOptions($("event-zone"), L.filterOptions(zones, "every zone"));
  }

  // ---- event cards ---------------------------------------------------------------------------

  function createCard(event) {
    const node = el("div", null, "event");
    node.dataset.eventId = event.id;
    const thumb = el("img", null, "thumb");
    thumb.alt = "snapshot of the event";
    thumb.addEventListener("click", () => openViewer(event.id));
    const parts = {
      thumb,
      title: el("div", null, "event-title"),
      zones: el("div", null, "event-zones muted"),
      times: el("div", null, "event-times muted"),
    };
    const info = el("div", null, "event-info");
    info.append(parts.title, parts.zones, parts.times);
    const remove = el("button", "Delete", "secondary delete");
    remove.type = "button";
    remove.addEventListener("click", () => deleteEvent(event.id).catch(app.handleError));
    node.append(thumb, info, remove);
    return { node, parts, key: null, url: null, blob: null, event };
  }

  function updateCard(card, event) {
    card.event = event;
    const p = card.parts;
    p.title.replaceChildren(el("strong", L.eventTitle(event), "event-label"), " on ", el("span", event.camera_id, "event-camera"),
      " · ", el("span", "score " + app.fmtNumber(event.top_score, 2), "event-score num"));
    const zones = (event.current_zones || []).length ? event.current_zones : event.entered_zones || [];
    p.zones.textContent = zones.length ? "zones: " + zones.join(", ") : "no zone";
    p.times.textContent = L.fmtTime(event.start_time) + " → " + (event.end_time === null ? "ongoing" : L.fmtTime(event.end_time));
    const key = L.snapshotKey(event);
    if (key !== card.key) {
      card.key = key;
      loadThumb(card, event, key).catch(app.handleError);
    }
  }

  async function loadThumb(card, event, key) {
    if (!event.has_snapshot) {
      setThumb(card, null, NO_SNAPSHOT);
      return;
    }
    const picture = await app.fetchImage("api/v1/events/" + encodeURIComponent(event.id) + "/snapshot.jpg");
    if (card.key !== key || cards.get(event.id) !== card) return;  // outrun by a newer snapshot, or deleted
    if (picture.blob) setThumb(card, picture.blob, URL.createObjectURL(picture.blob));
    else if (!card.url) setThumb(card, null, NO_SNAPSHOT);
  }

  function setThumb(card, blob, url) {
    if (card.url && card.url.startsWith("blob:")) URL.revokeObjectURL(card.url);
    card.url = url;
    card.blob = blob;
    card.parts.thumb.src = url;
  }

  function dropCard(id) {
    const card = cards.get(id);
    if (!card) return;
    cards.delete(id);
    if (card.url && card.url.startsWith("blob:")) URL.revokeObjectURL(card.url);
    card.node.remove();
  }

  function renderEvents(list, total) {
    const ids = new Set(list.map((event) => event.id));
    for (const id of Array.from(cards.keys())) if (!ids.has(id)) dropCard(id);
    const nodes = [];
    for (const event of list) {
      let card = cards.get(event.id);
      if (!card) {
        card = createCard(event);
        cards.set(event.id, card);
      }
      updateCard(card, event);
      nodes.push(card.node);
      seen.labels.add(event.label);
      for (const zone of event.entered_zones || []) seen.zones.add(zone);
    }
    app.syncChildren($("events-list"), nodes);
    $("events-empty").hidden = list.length > 0;
    $("events-count").textContent = list.length ? "· " + list.length + " of " + total + " event" + (total === 1 ? "" : "s") : "";
    $("events-more").hidden = list.length >= total;
    updateFilterOptions();
  }

  // Every page shown is read again, so an event deleted or added anywhere shows.
  async function refreshEvents() {
    const wanted = ++generation;
    const list = [];
    let total = 0;
    while (list.length < shown) {
      const result = await app.api(L.eventsQuery(filters(), Math.min(MAX_LIMIT, shown - list.length), list.length));
      if (wanted !== generation) return;
      if (!result.ok || !result.body) {
        $("events-error").textContent = L.problemMessages(result.status, result.body).join(" ");
        return;
      }
      const page = result.body.events || [];
      list.push(...page.filter((event) => !list.some((old) => old.id === event.id)));
      total = result.body.total || 0;
      if (page.length < MAX_LIMIT) break;
    }
    $("events-error").textContent = "";
    renderEvents(list, total);
  }

  // The recordings card shows continuous recording only; it says how many event clips there are.
  async function refreshClipCount() {
    const result = await app.api("api/v1/events?has_clip=1&limit=1");
    if (result.ok && result.body) $("rec-clip-count").textContent = String(result.body.total);
  }

  async function deleteEvent(id) {
    const card = cards.get(id);
    const what = card ? card.event.label + " on " + card.event.camera_id + " at " + L.fmtTime(card.event.start_time) : id;
    if (!window.confirm("Delete the event " + what + " and its snapshot?")) return;
    const result = await app.api("api/v1/events/" + encodeURIComponent(id), { method: "DELETE" });
    if (result.status === 204 || result.status === 404) {
      dropCard(id);
      $("events-error").textContent = "";
      $("events-empty").hidden = cards.size > 0;
    } else {
      $("events-error").textContent = L.problemMessages(result.status, result.body).join(" ");
    }
  }

  // ---- the full snapshot and the clip --------------------------------------------------------

  function openViewer(id) {
    const card = cards.get(id);
    if (!card || !card.url) return;
    closeViewerUrl();
    // Its own URL: the card's may be revoked by a newer snapshot while the viewer is open.
    viewerUrl = card.blob ? URL.createObjectURL(card.blob) : card.url;
    $("event-full").src = viewerUrl;
    $("event-full").hidden = false;
    $("event-download").hidden = true;
    const e = card.event;
    $("event-caption").textContent = L.eventTitle(e) + " on " + e.camera_id + " · score " + app.fmtNumber(e.top_score, 2) +
      " · " + L.fmtTime(e.start_time);
    viewerEventId = id;
    $("event-video").poster = viewerUrl;
    $("event-clip-note").textContent = "";
    // has_clip says whether there is one; an event stored before clips existed does not say, and
    // is asked about only while something is recorded (else there is nothing to ask).
    if (e.has_clip === true || (e.has_clip === undefined && L.recordingOn(app.config()))) {
      openClip(id).catch(app.handleError);
      overlay.load(id, e.label).catch(app.handleError);
    }
    const viewer = $("event-viewer");
    if (!viewer.open) viewer.showModal();
  }

  // The clip replaces the snapshot when there is one; without, the note says why (no clip,
  // recording off) under the snapshot.
  async function openClip(id, part = 0) {
    const answer = await clipPlayer.load("api/v1/events/" + encodeURIComponent(id) + "/clip-url" +
                                         (part ? "?part=" + part : ""));
    if (viewerEventId !== id) return;
    const playing = Boolean(answer);
    clipPart = playing && Number.isInteger(answer.part) ? answer.part : 0;
    clipParts = playing && Number.isInteger(answer.parts) ? answer.parts : 1;
    overlay.setPart(clipPart);
    if (playing && clipParts > 1) {
      $("event-clip-note").textContent = "Clip part " + (clipPart + 1) + " of " + clipParts +
        (clipPart + 1 < clipParts ? "; the next part plays when this one ends." : ".");
    }
    $("event-full").hidden = playing;
    $("event-download").hidden = !playing;
    // The click that opened the viewer lets it start; should the browser refuse, the controls remain.
    if (playing) $("event-video").play().catch(() => {});
  }

  $("event-download").addEventListener("click", () => {
    if (viewerEventId) {
      clipPlayer.download(viewerEventId + (clipPart ? "-part" + clipPart : "") + ".mp4").catch(app.handleError);
    }
  });
  // The end of one part starts the next, so a long event plays through as one clip.
  $("event-video").addEventListener("ended", () => {
    if (viewerEventId && clipPart + 1 < clipParts) openClip(viewerEventId, clipPart + 1).catch(app.handleError);
  });

  function closeViewerUrl() {
    if (viewerUrl && viewerUrl.startsWith("blob:")) URL.revokeObjectURL(viewerUrl);
    viewerUrl = null;
  }

  $("event-viewer").addEventListener("close", () => {
    viewerEventId = null;
    clipPart = 0;
    clipParts = 1;
    clipPlayer.stop();
    overlay.clear();
    $("event-clip-note").textContent = "";
    $("event-video").removeAttribute("poster");
    $("event-full").removeAttribute("src");
    closeViewerUrl();
  });
  $("event-viewer-close").addEventListener("click", () => $("event-viewer").close());
  for (const id of ["event-camera", "event-label", "event-zone"]) {
    $(id).addEventListener("change", () => {
      shown = EVENTS_LIMIT;
      refreshEvents().catch(app.handleError);
    });
  }
  $("events-more").addEventListener("click", () => {
    shown += EVENTS_LIMIT;
    refreshEvents().catch(app.handleError);
  });

  // ---- counts --------------------------------------------------------------------------------

  const COUNT_ATTRIBUTE = { cameras: "countCamera", zones: "countZone", lines: "countLine" };

  function countRow(kind, row) {
    const tr = el("tr");
    tr.dataset[COUNT_ATTRIBUTE[kind]] = row.owner;
    tr.append(el("td", row.owner));
    if (kind === "lines") {
      tr.append(el("td", null, "num in"), el("td", null, "num out"));
    } else {
      tr.dataset.label = row.label;
      tr.append(el("td", row.label), el("td", null, "num count"));
    }
    return tr;
  }

  function renderCountRows(kind, rows) {
    const byKey = countRowsByKey[kind];
    const keys = new Set(rows.map((row) => row.key));
    for (const key of Array.from(byKey.keys())) if (!keys.has(key)) byKey.delete(key);
    const nodes = rows.map((row) => {
      let tr = byKey.get(row.key);
      if (!tr) {
        tr = countRow(kind, row);
        byKey.set(row.key, tr);
      }
      const cells = tr.children;
      if (kind === "lines") {
        cells[1].textContent = String(row.in ?? "–");
        cells[2].textContent = String(row.out ?? "–");
      } else {
        cells[2].textContent = String(row.count ?? "–");
      }
      return tr;
    });
    app.syncChildren($("counts-" + kind), nodes);
    $("counts-" + kind + "-empty").hidden = rows.length > 0;
  }

  async function refreshCounts() {
    const result = await app.api("api/v1/counts");
    if (!result.ok || !result.body) return;
    const rows = L.countRows(result.body);
    for (const kind of ["cameras", "zones", "lines"]) renderCountRows(kind, rows[kind]);
    app.notify("counts", result.body);  // the zones' figures (zone_figures.js)
    for (const row of rows.cameras.concat(rows.zones)) seen.labels.add(row.label);
  }

  return {
    config: updateFilterOptions,
    start() {
      updateFilterOptions();
    },
    stop() {
      if ($("event-viewer").open) $("event-viewer").close();
    },
    poll(tick) {
      const work = [refreshCounts()];
      if (tick % EVENTS_EVERY_TICKS === 1) work.push(refreshEvents(), refreshClipCount());
      return Promise.all(work);
    },
  };
});
