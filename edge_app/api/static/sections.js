// The dashboard's sections (Live, Review, Recordings, Zones and lines, Settings, Device), one at a
// time, picked by the address's hash so each can be bookmarked. A card belongs to the section in
// its data-section attribute. Adds app.section() and app.showSection(name); the other views hear
// the "section" hook with the section shown.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function sections(app) {
  const SECTIONS = ["live", "review", "recordings", "zones", "settings", "device"];
  const DEFAULT = "live";
  let current = null;

  function wanted() {
    const name = location.hash.replace(/^#/, "");
    return SECTIONS.includes(name) ? name : DEFAULT;
  }

  function render() {
    const name = wanted();
    if (name === current) return;
    current = name;
    document.body.dataset.section = name;
    for (const card of document.querySelectorAll("#main [data-section]")) card.hidden = card.dataset.section !== name;
    for (const link of document.querySelectorAll("#nav a")) {
      if (link.getAttribute("href") === "#" + name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    window.scrollTo(0, 0);  // the hash names an element too; the section starts at its top
    app.notify("section", name);
  }

  function showSection(name) {
    if (location.hash !== "#" + name) location.hash = name;  // hashchange renders it
    else render();
  }

  window.addEventListener("hashchange", render);
  Object.assign(app, { section: () => current || wanted(), showSection });
  return {
    start() {
      app.$("nav").hidden = false;
      current = null;
      render();
    },
    stop() { app.$("nav").hidden = true; },
  };
});
