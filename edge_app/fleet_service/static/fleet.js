// The fleet page: polls the fleet service's REST API and renders it. No libraries, no build step.
// Text from devices is always set with textContent, never parsed as HTML. shared/page.js (loaded
// first, the dashboard's too) brings api(), el() and setLink().
"use strict";

(function () {
  const TOKEN_KEY = "edge-app.fleet-token";
  const POLL_MS = 2000;
  const PAGE = 200;  // devices per page: the API hands them out in pages, by id or worst first
  const $ = (id) => document.getElementById(id);
  // cursors[i] is the "after" of page i (null for the first); next is the API's cursor past this page.
  const state = { token: sessionStorage.getItem(TOKEN_KEY) || "", timer: null, rolloutDetails: {}, cursors: [null], next: null };

  const { Unauthorized, el, setLink } = globalThis.EdgePage;
  const api = globalThis.EdgePage.apiClient(() => state.token);

  function row(cells) {
    const tr = el("tr");
    for (const cell of cells) {
      const td = el("td");
      if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === null || cell === undefined ? "–" : String(cell);
      tr.appendChild(td);
    }
    return tr;
  }

  function pill(text, cls) { return el("span", text, "pill " + (cls || text)); }

  function fmtTime(seconds) {
    return typeof seconds === "number" ? new Date(seconds * 1000).toLocaleString() : "–";
  }

  function fmtAgo(seconds) {
    if (typeof seconds !== "number") return "–";
    const ago = Math.max(0, Date.now() / 1000 - seconds);
    if (ago < 90) return Math.round(ago) + " s ago";
    if (ago < 5400) return Math.round(ago / 60) + " min ago";
    return fmtTime(seconds);
  }

  function replace(tbody, rows, emptyText, columns) {
    tbody.replaceChildren(...rows);
    if (!rows.length) { const tr = el("tr"); const td = el("td", emptyText, "muted"); td.colSpan = columns; tr.appendChild(td); tbody.appendChild(tr); }
  }

  function renderCounts(perState) {
    const counts = perState || {};
    $("count-total").textContent = Object.values(counts).reduce((a, b) => a + b, 0);
    $("count-online").textContent = counts.online || 0;
    $("count-offline").textContent = counts.offline || 0;
  }

  function renderPager(page) {
    const first = (state.cursors.length - 1) * PAGE;
    $("page-info").textContent = page.total ? (first + 1) + "–" + (first + page.devices.length) + " of " + page.total : "";
    $("page-prev").disabled = state.cursors.length < 2;
    $("page-next").disabled = !page.next;
    state.next = page.next;
  }

  function renderDevices(devices) {
    replace($("devices"), devices.map((d) => {
      const cams = el("span", null, "cams");
      for (const c of d.cameras || []) { const p = pill(c.id, c.state); p.title = c.state + (c.error ? ": " + c.error : ""); cams.appendChild(p); }
      const cfg = d.config || {};
      const cfgCell = cfg.status ? pill(cfg.status + " v" + cfg.desired_version, cfg.status) : el("span", "–", "muted");
      const tr = row([d.device_id, pill(d.state), d.version, fmtAgo(d.last_seen), cams, cfgCell, modelsCell(d.models_state),
        healthCell(d.health)]);
      tr.dataset.device = d.device_id;
      tr.dataset.state = d.state;
      tr.dataset.problems = ((d.health || {}).problems || []).join(" ");
      return tr;
    }), "No devices yet.", 8);
  }

  // Each model's reported state (models_state): version, state, download progress, why it failed.
  const MODEL_PILL = { running: "ok", downloading: "warn", building: "warn", failed: "error", waiting: "pending" };
  function modelPill(name, m) {
    const progress = m.state === "downloading" && typeof m.progress === "number" ? " " + Math.round(m.progress * 100) + " %" : "";
    const p = pill(name + " v" + m.version + " " + m.state + progress, MODEL_PILL[m.state] || "pending");
    if (m.reason) p.title = m.reason;
    return p;
  }

  function modelsCell(models) {
    const names = Object.keys(models || {});
    if (!names.length) return el("span", "–", "muted");
    const cell = el("span", null, "models");
    for (const name of names) cell.appendChild(modelPill(name, models[name]));
    return cell;
  }

  // The latest R/health: its problems as pills, and the hottest temperature.
  function healthCell(health) {
    if (!health) return el("span", "–", "muted");
    const cell = el("span", null, "cams");
    for (const kind of health.problems || []) cell.appendChild(pill(kind.replace("_", " "), "error"));
    if (typeof health.temperature_c === "number") cell.appendChild(el("span", health.temperature_c.toFixed(1) + " °C"));
    return cell;
  }

  function renderRollouts(rollouts) {
    replace($("rollouts"), rollouts.map((r) => {
      const detail = state.rolloutDetails[r.rollout_id];
      const errors = el("span");
      if (detail && detail.model) {  // a model rollout: devices per model state, and why some failed
        const counts = Object.entries(detail.model.devices).filter(([, n]) => n).map(([k, n]) => n + " " + k);
        errors.appendChild(el("div", detail.model.name + " v" + detail.model.version + ": " + counts.join(", ")));
        for (const item of detail.results.filter((x) => x.model && x.model.state === "failed").slice(0, 10)) {
          errors.appendChild(el("div", item.device_id + " – " + (item.model.reason || "failed"), "error"));
        }
      } else if (detail) {
        for (const item of detail.results.filter((x) => x.status === "rejected")) {
          const msgs = (item.errors || []).map((e) => (e.loc ? e.loc + ": " : "") + e.msg).join("; ");
          errors.appendChild(el("div", item.device_id + " – " + msgs, "error"));
        }
      }
      const target = r.target === "all" ? "all" : (r.target || []).join(", ");
      const tr = row([fmtTime(r.created_at), target, JSON.stringify(r.patch), pill(String(r.devices.applied), "applied"),
        pill(String(r.devices.pending), "pending"), pill(String(r.devices.rejected), "rejected"), errors]);
      tr.dataset.rollout = r.rollout_id;
      return tr;
    }), "No rollouts yet.", 7);
  }

  function renderEvents(events) {
    replace($("events"), events.map((e) => row([fmtTime(e.start_time), e.device_id, e.camera_id, e.label,
      typeof e.top_score === "number" ? e.top_score.toFixed(2) : "–", (e.entered_zones || []).join(", "),
      e.end_time ? fmtTime(e.end_time) : "open"])), "No events yet.", 7);
  }

  async function refresh() {
    try {
      const query = new URLSearchParams({ limit: String(PAGE) });
      if ($("state-filter").value) query.set("state", $("state-filter").value);
      if ($("problem-filter").value) query.set("problem", $("problem-filter").value);
      if ($("device-sort").value) query.set("sort", $("device-sort").value);
      const after = state.cursors[state.cursors.length - 1];
      if (after) query.set("after", after);
      const [page, status, events, rollouts] = await Promise.all([
        api("api/v1/devices?" + query), api("api/v1/status"), api("api/v1/events?limit=20"), api("api/v1/rollouts")]);
      if (!page.ok) throw new Error((page.body && page.body.error) || "HTTP " + page.status);
      renderDevices(page.body.devices);
      renderPager(page.body);
      if (status.ok) renderCounts(status.body.devices);
      if (events.ok) renderEvents(events.body.events);
      if (rollouts.ok) {
        // Per-device errors of rollouts that have rejections (a few at most on one page).
        for (const r of rollouts.body.rollouts.slice(0, 5)) {
          const known = state.rolloutDetails[r.rollout_id];
          const modelBusy = r.model && !(known && known.model && known.model.devices.running + known.model.devices.failed ===
            Object.values(r.devices).reduce((a, b) => a + b, 0));
          if (modelBusy || (r.devices.rejected && !(known && !r.devices.pending))) {
            const detail = await api("api/v1/rollouts/" + encodeURIComponent(r.rollout_id));
            if (detail.ok) state.rolloutDetails[r.rollout_id] = detail.body;
          }
        }
        renderRollouts(rollouts.body.rollouts);
      }
      setLink("live", "ok");
      $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (err) {
      if (err instanceof Unauthorized) { showLogin(state.token ? "That token was not accepted." : ""); return; }
      setLink("unreachable", "offline");
    }
  }

  function stopPolling() { if (state.timer) clearInterval(state.timer); state.timer = null; }

  function start() {
    $("login").hidden = true;
    $("main").hidden = false;
    $("forget-token").hidden = !state.token;
    stopPolling();
    refresh();
    state.timer = setInterval(refresh, POLL_MS);
  }

  function showLogin(message) {
    stopPolling();
    $("main").hidden = true;
    $("login").hidden = false;
    setLink("locked", "offline");
    $("login-error").textContent = message || "";
    $("token-input").focus();
  }

  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token-input").value.trim();
    sessionStorage.setItem(TOKEN_KEY, state.token);
    start();
  });
  $("forget-token").addEventListener("click", () => { state.token = ""; sessionStorage.removeItem(TOKEN_KEY); showLogin(); });
  // A new filter or order starts again at the first page: the cursors belong to the old one.
  for (const id of ["state-filter", "problem-filter", "device-sort"]) {
    $(id).addEventListener("change", () => { state.cursors = [null]; refresh(); });
  }
  $("page-prev").addEventListener("click", () => { if (state.cursors.length > 1) { state.cursors.pop(); refresh(); } });
  $("page-next").addEventListener("click", () => { if (state.next) { state.cursors.push(state.next); refresh(); } });

  $("rollout-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = $("rollout-result");
    let patch;
    try { patch = JSON.parse($("rollout-patch").value); } catch (err) { out.textContent = "The patch is not JSON: " + err.message; out.className = "error"; return; }
    const text = $("rollout-devices").value.trim();
    const devices = text === "all" ? "all" : text.split(",").map((s) => s.trim()).filter(Boolean);
    try {
      const answer = await api("api/v1/fleet/config", { method: "PATCH", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ devices, patch }) });
      out.textContent = answer.ok ? "Started for " + Object.keys(answer.body.versions).length + " device(s)." : answer.body.error;
      out.className = answer.ok ? "muted" : "error";
      refresh();
    } catch (err) {
      if (err instanceof Unauthorized) showLogin("That token was not accepted.");
    }
  });

  start();
})();
