// One camera at a time: its settings (PATCH /api/v1/cameras/<id> with only what changed), a
// new camera (POST /api/v1/cameras) and removing one (DELETE). A refused edit shows the API's
// problems, each naming its field.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function cameras(app) {
  const L = globalThis.EdgeLogic;
  const { $, el } = app;
  const TEXT_FIELDS = ["fps_limit", "source"];
  const CHECKBOXES = ["enabled", "detect"];
  let shown = null;  // the camera id the form was filled for
  let dirty = false;  // the form holds edits not saved yet

  function showErrors(messages) {
    $("edit-errors").replaceChildren(...messages.map((text) => el("li", text)));
  }

  function showResult(text) {
    $("edit-result").textContent = text;
  }

  function fill(id) {
    const camera = app.cameraConfig(id);
    shown = camera ? id : null;
    dirty = false;
    const form = camera ? L.cameraForm(camera) : { fps_limit: "", source: "", enabled: false, detect: false, decoder: "auto" };
    for (const key of TEXT_FIELDS) $("edit-" + key).value = form[key];
    for (const key of CHECKBOXES) $("edit-" + key).checked = !!form[key];
    $("edit-decoder").value = form.decoder;
    $("delete-camera").disabled = $("edit-save").disabled = !camera;
  }

  function formValues() {
    const form = {};
    for (const key of TEXT_FIELDS) form[key] = $("edit-" + key).value;
    for (const key of CHECKBOXES) form[key] = $("edit-" + key).checked;
    form.decoder = $("edit-decoder").value;
    return form;
  }

  function refused(result) {
    showResult("");
    showErrors(L.problemMessages(result.status, result.body));
  }

  async function save() {
    const id = $("edit-camera").value;
    const camera = app.cameraConfig(id);
    if (!camera) return;
    const patch = L.cameraPatch(camera, formValues());
    if (!Object.keys(patch).length) {
      showErrors([]);
      showResult("nothing changed");
      return;
    }
    $("edit-save").disabled = true;
    await app.holdLive(id);  // the camera restarts with its new settings
    let result = { ok: false };
    try {
      result = await app.api("api/v1/cameras/" + encodeURIComponent(id), {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(patch),
      });
      if (!result.ok) {
        refused(result);
        return;
      }
      dirty = false;
      await app.reloadConfig();  // before saying so: the form shows the saved camera then
      showErrors([]);
      showResult("saved");
    } finally {
      $("edit-save").disabled = false;
      await app.releaseLive(id, result.ok);
    }
  }

  async function add() {
    const camera = { id: $("add-id").value.trim(), source: $("add-source").value.trim() };
    const result = await app.api("api/v1/cameras", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(camera),
    });
    if (!result.ok) {
      refused(result);
      return;
    }
    $("add-id").value = "";
    $("add-source").value = "";
    await app.reloadConfig();
    $("edit-camera").value = camera.id;
    fill(camera.id);
    showErrors([]);
    showResult("added " + camera.id);
  }

  async function remove() {
    const id = $("edit-camera").value;
    if (!id || !window.confirm("Delete camera " + id + " from the configuration?")) return;
    const result = await app.api("api/v1/cameras/" + encodeURIComponent(id), { method: "DELETE" });
    if (result.status !== 204) {
      refused(result);
      return;
    }
    await app.reloadConfig();
    showErrors([]);
    showResult("deleted " + id);
  }

  $("edit-camera").addEventListener("change", () => {
    showErrors([]);
    showResult("");
    fill($("edit-camera").value);
  });
  for (const key of TEXT_FIELDS.concat(CHECKBOXES, ["decoder"])) {
    $("edit-" + key).addEventListener("input", () => { dirty = true; });
    $("edit-" + key).addEventListener("change", () => { dirty = true; });
  }
  $("edit-save").addEventListener("click", () => save().catch(app.handleError));
  $("add-camera").addEventListener("click", () => add().catch(app.handleError));
  $("delete-camera").addEventListener("click", () => remove().catch(app.handleError));

  return {
    config(config) {
      const ids = (config.cameras || []).map((cam) => cam.id);
      app.setOptions($("edit-camera"), ids.map((id) => ({ value: id, text: id })));
      const id = $("edit-camera").value;
      // A newer configuration refills the form, unless it would throw away edits in progress.
      if (id !== shown || !dirty) fill(id);
    },
  };
});
