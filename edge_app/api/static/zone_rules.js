// The loitering and occupancy rules of a zone in the area editor (cameras[].zones[].loitering_s and
// max_objects, docs/analytics.md "Dwell and loitering"), and the zones' figures of the counts view.
// Pure functions: the editor (areas.js) and zone_figures.js use them through
// globalThis.EdgeZoneRules, and the tests call them directly in Node.
"use strict";

(function () {
  function trimmed(text) {
    return String(text === undefined || text === null ? "" : text).trim();
  }

  // A zone's rules from the editor's two inputs: a blank input leaves that rule out. A number is
  // sent as a number; anything else as typed, so the API's refusal names the field.
  function zoneRules(loiteringText, maxObjectsText) {
    const rules = {};
    for (const [key, text] of [["loitering_s", trimmed(loiteringText)], ["max_objects", trimmed(maxObjectsText)]]) {
      if (text === "") continue;
      const value = Number(text);
      rules[key] = Number.isFinite(value) ? value : text;
    }
    return rules;
  }

  // What the editor's list says of a zone's rules ("" without any).
  function zoneRulesText(zone) {
    const parts = [];
    if (zone && zone.loitering_s !== undefined && zone.loitering_s !== null) parts.push("loitering after " + zone.loitering_s + " s");
    if (zone && zone.max_objects !== undefined && zone.max_objects !== null) parts.push("alert above " + zone.max_objects + " inside");
    return parts.join(" · ");
  }

  // The rows of the counts view's "Zones now" table from GET /api/v1/counts (its zone_stats), by zone name.
  function zoneFigureRows(counts) {
    const stats = (counts && counts.zone_stats) || {};
    return Object.keys(stats).sort().map((zone) => {
      const s = stats[zone] || {};
      return {
        zone,
        inside: String(s.occupancy ?? "–"),
        meanDwell: s.mean_dwell_s === null || s.mean_dwell_s === undefined ? "–" : s.mean_dwell_s + " s",
        loitering: String(s.loitering ?? "–"),
        alert: s.over_capacity ? "over " + s.max_objects : "",
      };
    });
  }

  globalThis.EdgeZoneRules = { zoneRules, zoneRulesText, zoneFigureRows };
})();
