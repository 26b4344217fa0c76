// The zones now, in the counts view: objects inside, their mean dwell over the last hour, who
// loiters and the occupancy alert (zone_stats of GET /api/v1/counts, docs/analytics.md "Dwell and
// loitering"). Told each counts answer the counts view fetches (app.notify("counts")): no request of its own.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function zoneFigures(app) {
  const Z = globalThis.EdgeZoneRules;
  const { $, el } = app;

  function render(counts) {
    const nodes = Z.zoneFigureRows(counts).map((row) => {
      const tr = el("tr", null, row.alert ? "alert" : "");
      tr.dataset.zoneFigures = row.zone;
      tr.append(el("td", row.zone), el("td", row.inside, "num inside"), el("td", row.meanDwell, "num dwell"),
        el("td", row.loitering, "num loitering"), el("td", row.alert, "over"));
      return tr;
    });
    app.syncChildren($("zone-figures"), nodes);
    $("zone-figures-empty").hidden = nodes.length > 0;
  }

  return { counts: render };
});
