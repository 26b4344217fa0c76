// The configuration editor: the whole configuration as JSON; what the user changed is sent as
// one JSON merge patch. A configuration changed elsewhere (another view's save) replaces the
// text unless it holds edits not applied yet.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function configEditor(app) {
  const L = globalThis.EdgeLogic;
  const { $, el } = app;
  let loaded = null;  // the configuration the text was made from
  let replaceEdits = false;  // the next configuration replaces the text even if edited (Reload)

  function show(config) {
    loaded = config;
    $("config").value = JSON.stringify(config, null, 2);
  }

  function edited() {
    return loaded !== null && $("config").value !== JSON.stringify(loaded, null, 2);
  }

  function showResult(text, cls, details) {
    const box = $("config-result");
    box.replaceChildren(el("p", text, cls));
    if (details && details.length) {
      const list = el("ul");
      for (const d of details) list.append(el("li", (d.loc ? d.loc + ": " : "") + d.msg, "error"));
      box.append(list);
    }
  }

  async function applyConfig() {
    let text;
    try {
      text = JSON.parse($("config").value);
    } catch (err) {
      showResult("Not valid JSON: " + err.message, "error");
      return;
    }
    if (!L.isObject(text) || !loaded) {
      showResult("The configuration must be a JSON object.", "error");
      return;
    }
    const patch = L.mergeDiff(loaded, text);
    if (!Object.keys(patch).length) {
      showResult("Nothing changed.", "muted");
      return;
    }
    $("config-apply").disabled = true;
    // The change may restart the camera in the live view (see holdLive in liveview.js).
    const live = app.liveCamera();
    if (live !== null) await app.holdLive(live);
    let result = { ok: false };
    try {
      result = await app.api("api/v1/config", {
        method: "PATCH",
        headers: { "Content-Type": "application/merge-patch+json" },
        body: JSON.stringify(patch),
      });
      if (result.ok) {
        const restart = result.body.restart_required || [];
        replaceEdits = true;
        app.setConfig(result.body);
        showResult(restart.length ? "Applied and saved. Restart the appliance for: " + restart.join(", ") : "Applied and saved.", "ok");
      } else {
        showResult((result.body && result.body.error) || "HTTP " + result.status, "error", result.body && result.body.details);
      }
    } finally {
      $("config-apply").disabled = false;
      if (live !== null) await app.releaseLive(live, result.ok);
    }
  }

  $("config-apply").addEventListener("click", () => applyConfig().catch(app.handleError));
  $("config-reload").addEventListener("click", () => {
    $("config-result").replaceChildren();
    replaceEdits = true;
    app.reloadConfig().catch(app.handleError);
  });

  return {
    config(config) {
      if (replaceEdits || !edited()) show(config);
      replaceEdits = false;
    },
    configError(message) {
      showResult(message, "error");
    },
  };
});
