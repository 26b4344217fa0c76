// The speed fields of the zone and line editor: a line may measure the speed of the objects that
// cross it and then a second line of the camera (cameras[].lines[].speed), a zone that of the
// objects passing through it (cameras[].zones[].speed, its length); docs/analytics.md.
// lineSpeed(), zoneSpeed() and speedSummary() are pure (the tests call them in Node through
// globalThis.EdgeLogic); the part below shows the fields while a line or a zone is drawn, lists
// the camera's lines as the second line, and hands the editor the speed section to save with the
// area (app.areaSpeed(kind)).
"use strict";

(function () {
  const L = (globalThis.EdgeLogic = globalThis.EdgeLogic || {});

  // A number as typed, or the text itself: the API refuses what is not a number and names the
  // field, so the page does not guess.
  function typedNumber(text) {
    const trimmed = String(text == null ? "" : text).trim();
    const value = Number(trimmed);
    return trimmed !== "" && Number.isFinite(value) ? value : trimmed;
  }

  // The `speed` section of a line from the editor's fields, or null when no second line is picked.
  function lineSpeed(toLine, distanceText, maxText, unit) {
    const to = String(toLine || "").trim();
    if (!to) return null;
    const speed = { to_line: to, distance_m: typedNumber(distanceText) };
    if (String(maxText == null ? "" : maxText).trim() !== "") speed.max_kmh = typedNumber(maxText);
    speed.unit = unit === "mph" ? "mph" : "kmh";
    return speed;
  }

  // The `speed` section of a zone: its length, or null when the length is left empty.
  function zoneSpeed(distanceText, maxText, unit) {
    if (String(distanceText == null ? "" : distanceText).trim() === "") return null;
    const speed = { distance_m: typedNumber(distanceText) };
    if (String(maxText == null ? "" : maxText).trim() !== "") speed.max_kmh = typedNumber(maxText);
    speed.unit = unit === "mph" ? "mph" : "kmh";
    return speed;
  }

  // "speed to b over 12 m, limit 50 km/h" for the list of a camera's lines ("speed over 20 m" for
  // a zone); "" without speed.
  function speedSummary(area) {
    const speed = area && area.speed;
    if (!speed) return "";
    const limit = speed.max_kmh == null ? "" : ", limit " + speed.max_kmh + " km/h";
    const to = speed.to_line ? " to " + speed.to_line : "";
    return "speed" + to + " over " + speed.distance_m + " m" + limit + (speed.unit === "mph" ? " (mph)" : "");
  }

  Object.assign(L, { lineSpeed, zoneSpeed, speedSummary });

  if (!globalThis.document) return;  // Node: the pure functions only
  (globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function speed(app) {
    const { $ } = app;

    function render() {
      const kind = $("editor-kind").value;
      const isLine = kind === "line";
      $("editor-speed").hidden = kind !== "line" && kind !== "zone";
      $("editor-speed-to-field").hidden = !isLine;
      const camera = app.cameraConfig($("editor-camera").value);
      const own = String($("editor-name").value || "").trim();
      const others = ((camera && camera.lines) || []).map((line) => line.name).filter((name) => name !== own);
      const picked = $("editor-speed-to").value;
      app.setOptions($("editor-speed-to"), [{ value: "", text: "no speed" }].concat(
        others.map((name) => ({ value: name, text: name }))));
      $("editor-speed-to").value = others.includes(picked) ? picked : "";
      const measuring = !isLine || $("editor-speed-to").value !== "";
      for (const id of ["editor-speed-distance", "editor-speed-max", "editor-speed-unit"]) $(id).disabled = !measuring;
    }

    app.areaSpeed = (kind) => {
      const distance = $("editor-speed-distance").value, max = $("editor-speed-max").value;
      const unit = $("editor-speed-unit").value;
      if (kind === "line") return L.lineSpeed($("editor-speed-to").value, distance, max, unit);
      return kind === "zone" ? L.zoneSpeed(distance, max, unit) : null;
    };

    // After a save: the next area starts without speed, as it starts without a name.
    app.clearSpeed = () => {
      $("editor-speed-to").value = "";
      $("editor-speed-distance").value = "";
      $("editor-speed-max").value = "";
      render();
    };

    for (const id of ["editor-kind", "editor-camera", "editor-speed-to"]) $(id).addEventListener("change", render);
    $("editor-name").addEventListener("input", render);
    return { config: render };
  });
})();
