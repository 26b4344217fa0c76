// The profile selector in the header (docs/profiles.md): the active profile, why, and the next
// scheduled boundary, from GET api/v1/profile on every poll; picking one POSTs it, and it holds
// until that boundary. Hidden while the configuration has no profiles.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function profileSelector(app) {
  const { $, el } = app;
  let switching = false;  // a POST in flight: the poll must not put the old choice back meanwhile

  function when(iso) {
    if (!iso) return "";
    const at = new Date(iso);
    return Number.isNaN(at.getTime()) ? iso : at.toLocaleString([], { weekday: "short", hour: "2-digit", minute: "2-digit" });
  }

  function meta(report) {
    if (report.source === "manual") return "held until " + when(report.hold_until);
    if (report.next_boundary) return "schedule; " + (report.next_profile || "no profile") + " from " + when(report.next_boundary);
    return report.source === "default" ? "default" : "";
  }

  function render(report) {
    const box = $("profile-box");
    box.hidden = !report.profiles.length;
    if (box.hidden || switching) return;
    const select = $("profile-select");
    const names = (report.active === null ? [""] : []).concat(report.profiles);
    const current = Array.from(select.options).map((option) => option.value);
    if (current.join("\n") !== names.join("\n")) {
      select.replaceChildren(...names.map((name) => {
        const option = el("option", name || "(none)");
        option.value = name;
        return option;
      }));
    }
    select.value = report.active === null ? "" : report.active;
    $("profile-meta").textContent = meta(report);
  }

  async function choose() {
    const name = $("profile-select").value;
    if (!name) return;
    switching = true;
    let result = { ok: false };
    try {
      result = await app.api("api/v1/profile", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ profile: name }),
      });
    } finally {
      switching = false;
    }
    if (result.ok) render(result.body);
    else $("profile-meta").textContent = (result.body && result.body.error) || "HTTP " + result.status;
  }

  $("profile-select").addEventListener("change", () => choose().catch(app.handleError));

  return {
    async poll() {
      const result = await app.api("api/v1/profile");
      if (result.ok) render(result.body);
    },
  };
});
