// The loitering and occupancy rules of a zone in the area editor (cameras[].zones[].loitering_s and
// max_objects, docs/analytics.md "Dwell and loitering"). Pure functions: the editor (areas.js) uses
// them through globalThis.EdgeZoneRules, and the tests call them directly in Node.
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

  globalThis.EdgeZoneRules = { zoneRules, zoneRulesText };
})();
