// Review: the review items of GET /api/v1/review (events of a camera grouped by activity, each an
// alert or a detection; docs/review.md), newest first in pages of 50 with a "More" button. Each
// item shows its labels, zones, duration and a strip of its events' snapshots, plays its clip
// inline, and is marked reviewed on its own or with every item up to it. Keys while the section is
// open: j / k next / previous item, r mark it reviewed, space play or pause its clip.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function review(app) {
  const L = globalThis.EdgeLogic;
  const STRIP_MAX = 6;  // snapshots per item: enough to tell who it was, few enough to stay light
  const THUMBS_AT_ONCE = 4;  // snapshot requests in flight over the whole list
  const REFRESH_EVERY_TICKS = 5;  // the first page is read again every fifth poll (about 10 s)
  const { $, el, api } = app;

  const state = { items: [], total: 0, page: 0, pages: 0, selected: -1, loading: false, labels: new Set(), zones: new Set(), queue: [], inFlight: 0 };
  const nodes = new Map();  // item id -> its element, kept between reads so pictures stay

  function filterParams() {
    const params = new URLSearchParams();
    for (const name of ["camera", "label", "zone", "severity", "reviewed", "day"]) {
      const value = $("review-" + name).value;
      if (value !== "") params.set(name, value);
    }
    return params;
  }

  function fmtDuration(seconds) {
    if (typeof seconds !== "number") return "ongoing";
    return seconds < 60 ? seconds.toFixed(0) + " s" : Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s";
  }

  async function load(reset) {
    if (state.loading) return;
    state.loading = true;
    try {
      const page = reset ? 1 : state.page + 1;
      const params = filterParams();
      params.set("page", String(page));
      const result = await api("api/v1/review?" + params.toString());
      if (!result.ok || !result.body) {
        $("review-error").textContent = L.problemMessages(result.status, result.body).join(" ");
        return;
      }
      $("review-error").textContent = "";
      const body = result.body;
      const fresh = body.items || [];
      if (reset) {
        // The first page is read again; items of later pages the user has loaded stay.
        const later = state.page > 1 ? state.items.slice(50).filter((old) => !fresh.some((item) => item.id === old.id)) : [];
        state.items = fresh.concat(later);
        state.page = Math.max(state.page, 1);
      } else {
        state.items = state.items.concat(fresh.filter((item) => !state.items.some((old) => old.id === item.id)));
        state.page = page;
      }
      state.total = body.total || 0;
      state.pages = body.pages || 0;
      render();
    } finally {
      state.loading = false;
    }
  }

  function render() {
    const list = [];
    for (const item of state.items) {
      for (const label of item.labels || []) state.labels.add(label);
      for (const zone of item.zones || []) state.zones.add(zone);
      let node = nodes.get(item.id);
      if (!node) {
        node = createItem(item);
        nodes.set(item.id, node);
      }
      updateItem(node, item);
      list.push(node);
    }
    for (const id of Array.from(nodes.keys())) {
      if (!state.items.some((item) => item.id === id)) nodes.delete(id);
    }
    app.syncChildren($("review-list"), list);
    $("review-empty").hidden = state.items.length > 0;
    $("review-count").textContent = "· " + state.items.length + " of " + state.total + " item" + (state.total === 1 ? "" : "s");
    $("review-more").hidden = state.page >= state.pages;
    app.setOptions($("review-label"), L.filterOptions(Array.from(state.labels).sort(), "every label"));
    app.setOptions($("review-zone"), L.filterOptions(Array.from(state.zones).sort(), "every zone"));
    if (state.selected >= state.items.length) state.selected = state.items.length - 1;
    showSelected(false);
  }

  function button(text, label, onClick) {
    const node = el("button", text, "secondary");
    node.type = "button";
    node.setAttribute("aria-label", label);
    node.addEventListener("click", (event) => {
      event.stopPropagation();
      onClick();
    });
    return node;
  }

  function createItem(item) {
    const node = el("article", null, "review-item");
    node.dataset.id = item.id;
    node.setAttribute("role", "listitem");
    node.tabIndex = -1;
    const info = el("div", null, "item-info");
    const actions = el("div", null, "item-actions");
    const strip = el("div", null, "strip");
    const video = el("video");
    video.controls = true;
    video.playsInline = true;
    video.preload = "auto";
    video.hidden = true;
    const note = el("p", null, "muted clip-note");
    const player = app.signedPlayer(video, note);
    // The clip in a frame with the boxes of its event drawn over it (app.trackOverlay).
    const frame = el("div", null, "picture-frame");
    const boxes = app.svgEl("svg", { "aria-label": "the event's boxes" }, "overlay boxes");
    frame.append(video, boxes);
    const overlay = app.trackOverlay(video, boxes, null);
    // What plays: the index among the item's events with a clip, the part, and how many parts.
    const parts = { info, strip, video, note, player, overlay, play: null, mark: null, thumbs: false,
                    playing: null };
    // One clip ending starts the next part, then the next event's clip: the item plays through.
    video.addEventListener("ended", () => {
      const at = parts.playing;
      if (!at) return;
      if (at.part + 1 < at.parts) playClip(node, at.clip, at.part + 1).catch(app.handleError);
      else if (at.clip + 1 < clipsOf(node.item).length) playClip(node, at.clip + 1, 0).catch(app.handleError);
    });
    parts.play = button("Play clip", "play the clip of this item", () => togglePlay(node));
    parts.mark = button("Mark reviewed", "mark this item reviewed", () => markItem(node.dataset.id, !node.classList.contains("reviewed")));
    const upTo = button("Reviewed up to here", "mark this item and every older one reviewed", () => markUpTo(node.dataset.id));
    actions.append(parts.play, parts.mark, upTo);
    node.append(info, actions, strip, frame, note);
    node.parts = parts;
    node.addEventListener("click", () => select(state.items.findIndex((i) => i.id === node.dataset.id), false));
    return node;
  }

  function updateItem(node, item) {
    const p = node.parts;
    node.item = item;
    node.className = "review-item " + item.severity + (item.reviewed ? " reviewed" : "");
    node.dataset.reviewed = String(!!item.reviewed);
    const when = L.fmtTime ? L.fmtTime(item.start_time) : new Date(item.start_time * 1000).toLocaleString();
    const head = el("div");
    head.append(el("span", item.severity, "pill " + item.severity), " ", el("strong", (item.labels || []).join(", ") || "?"),
      " on " + item.camera_id);
    const facts = el("div", when + " · " + fmtDuration(item.duration_s) + " · " + item.event_count + " event" +
      (item.event_count === 1 ? "" : "s") + ((item.zones || []).length ? " · zones " + item.zones.join(", ") : "") +
      " · best score " + app.fmtNumber(Math.max(0, ...(item.events || []).map((e) => e.top_score || 0)), 2), "muted");
    p.info.replaceChildren(head, facts);
    p.mark.textContent = item.reviewed ? "Mark unreviewed" : "Mark reviewed";
    p.mark.setAttribute("aria-label", item.reviewed ? "mark this item not reviewed" : "mark this item reviewed");
    p.play.disabled = !(item.events || []).some((e) => e.has_clip);
    if (!p.thumbs) queueThumbs(node, item);
  }

  // ---- thumbnails: a few requests at a time over the whole list ----------------------------

  function queueThumbs(node, item) {
    const withSnapshots = (item.events || []).filter((e) => e.has_snapshot).slice(-STRIP_MAX);
    if (!withSnapshots.length) return;
    node.parts.thumbs = true;
    for (const event of withSnapshots) {
      const img = el("img");
      img.alt = L.eventTitle(event) + " at " + new Date(event.start_time * 1000).toLocaleTimeString();
      img.dataset.eventId = event.id;
      node.parts.strip.append(img);
      state.queue.push(img);
    }
    setTimeout(pump, 0);  // once the item is in the list (pictures of items gone are skipped)
  }

  function pump() {
    while (state.inFlight < THUMBS_AT_ONCE && state.queue.length) {
      const img = state.queue.shift();
      if (!img.isConnected) continue;
      state.inFlight += 1;
      app.fetchImage("api/v1/events/" + encodeURIComponent(img.dataset.eventId) + "/snapshot.jpg")
        .then((picture) => { if (picture.blob) img.src = URL.createObjectURL(picture.blob); })
        .catch(app.handleError)
        .finally(() => { state.inFlight -= 1; pump(); });
    }
  }

  // ---- playing, marking, keys --------------------------------------------------------------

  async function togglePlay(node) {
    const p = node.parts, video = p.video;
    if (p.player.playing()) {
      if (video.paused) video.play().catch(() => {});
      else video.pause();
      return;
    }
    await playClip(node, 0, 0);
  }

  function clipsOf(item) {
    return (item.events || []).filter((e) => e.has_clip);
  }

  // Part `part` of the clip of the item's `clip`-th event with a clip (events in time order).
  async function playClip(node, clip, part) {
    const p = node.parts, clips = clipsOf(node.item), event = clips[clip];
    if (!event) return;
    const answer = await p.player.load("api/v1/events/" + encodeURIComponent(event.id) + "/clip-url" +
                                       (part ? "?part=" + part : ""));
    if (!answer) {
      p.playing = null;
      return;
    }
    const at = { clip, part: Number.isInteger(answer.part) ? answer.part : part,
                 parts: Number.isInteger(answer.parts) ? answer.parts : 1 };
    p.playing = at;
    const pieces = [];
    if (clips.length > 1) pieces.push("Event " + (clip + 1) + " of " + clips.length);
    if (at.parts > 1) pieces.push("part " + (at.part + 1) + " of " + at.parts);
    p.note.textContent = pieces.length ? pieces.join(", ") + "." : "";
    p.video.play().catch(() => {});
    if (at.part === 0) await p.overlay.load(event.id, event.label).catch(app.handleError);
    p.overlay.setPart(at.part);
  }

  async function markItem(id, reviewed) {
    const result = await api("api/v1/review/reviewed", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ids: [id], reviewed }),
    });
    if (!result.ok) $("review-error").textContent = L.problemMessages(result.status, result.body).join(" ");
    await load(true);
  }

  async function markUpTo(id) {
    const item = state.items.find((i) => i.id === id);
    if (!item) return;
    const body = { before: item.start_time };
    for (const [name, value] of filterParams()) if (name !== "reviewed") body[name] = value;
    const result = await api("api/v1/review/reviewed", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    if (!result.ok) $("review-error").textContent = L.problemMessages(result.status, result.body).join(" ");
    await load(true);
  }

  function showSelected(scroll) {
    nodes.forEach((node) => node.classList.remove("selected"));
    const item = state.items[state.selected];
    const node = item && nodes.get(item.id);
    if (!node) return;
    node.classList.add("selected");
    if (scroll) {
      node.scrollIntoView({ block: "nearest" });
      node.focus({ preventScroll: true });
    }
  }

  function select(index, scroll = true) {
    if (!state.items.length) return;
    state.selected = Math.max(0, Math.min(state.items.length - 1, index));
    showSelected(scroll);
  }

  document.addEventListener("keydown", (event) => {
    if (app.section() !== "review" || $("main").hidden || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.matches("input, select, textarea") || (target.matches("button, video") && event.key === " "))) return;
    const item = state.items[state.selected];
    if (event.key === "j") select(state.selected + 1);
    else if (event.key === "k") select(state.selected - 1);
    else if (event.key === "r" && item) markItem(item.id, true).catch(app.handleError);
    else if (event.key === " " && item) togglePlay(nodes.get(item.id)).catch(app.handleError);
    else return;
    event.preventDefault();
  });

  for (const name of ["camera", "label", "zone", "severity", "reviewed", "day"]) {
    $("review-" + name).addEventListener("change", () => {
      state.page = 0;
      state.items = [];
      state.selected = -1;
      load(true).catch(app.handleError);
    });
  }
  $("review-more").addEventListener("click", () => load(false).catch(app.handleError));

  return {
    config(config) {
      const ids = ((config && config.cameras) || []).map((cam) => cam.id);
      app.setOptions($("review-camera"), L.filterOptions(ids, "every camera"));
      // The configured zones are offered before any item has entered them.
      for (const cam of (config && config.cameras) || []) for (const zone of cam.zones || []) state.zones.add(zone.name);
      app.setOptions($("review-zone"), L.filterOptions(Array.from(state.zones).sort(), "every zone"));
    },
    section(name) { if (name === "review") load(true).catch(app.handleError); },
    poll(tick) {
      if (app.section() !== "review" || tick % REFRESH_EVERY_TICKS !== 0) return null;
      return load(true);
    },
    stop() {
      state.items = [];
      state.page = 0;
    },
  };
});
