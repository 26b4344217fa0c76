// The boxes of an event drawn over its playing clip, from the track the appliance kept (GET
// /api/v1/events/<id>/track), never burned into the video: which object the event is about is
// visible, and the video stays as the camera sent it. Adds app.trackOverlay(video, svg, toggle);
// toggle is a checkbox that shows or hides the boxes, or null (always shown).
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function trackOverlay(app) {
  const L = globalThis.EdgeLogic;
  const HOLD_S = 0.5;  // a box stays this long before the first kept one and after the last

  function trackOverlay(video, svg, toggle) {
    let track = null;  // the API's answer
    let label = "";
    let part = 0;
    let wanted = 0;  // bumped by every load and clear: an older answer is dropped

    function draw() {
      const starts = track ? track.clip_starts || [] : [];
      if (!track || (toggle && !toggle.checked) || part >= starts.length || !video.videoWidth) {
        svg.replaceChildren();
        svg.dataset.shown = "";
        return;
      }
      const tS = starts[part] + video.currentTime - track.start_time;
      const box = L.trackBoxAt(track.points || [], tS, HOLD_S);
      const w = video.videoWidth, h = video.videoHeight;
      app.drawBoxes(svg, box ? [{ box: [box[0] * w, box[1] * h, box[2] * w, box[3] * h], label }] : [], w, h);
      svg.dataset.shown = box ? "1" : "";
    }

    // Every frame while it plays (requestVideoFrameCallback where the browser has it), and on seeking.
    function onFrame() {
      draw();
      if (!video.paused && !video.ended && track) schedule();
    }
    function schedule() {
      if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(onFrame);
      else requestAnimationFrame(onFrame);
    }
    video.addEventListener("play", schedule);
    for (const name of ["seeked", "loadeddata", "pause"]) video.addEventListener(name, draw);
    if (toggle) toggle.addEventListener("change", draw);

    async function load(eventId, eventLabel) {
      const asked = ++wanted;
      track = null;
      label = eventLabel || "";
      draw();
      const result = await app.api("api/v1/events/" + encodeURIComponent(eventId) + "/track");
      if (asked !== wanted) return;
      track = result.ok && result.body && Array.isArray(result.body.points) && result.body.points.length ? result.body : null;
      if (toggle) toggle.disabled = !track;  // an event still open, or older than tracks, has none
      draw();
      if (track && !video.paused) schedule();
    }

    function clear() {
      ++wanted;
      track = null;
      draw();
    }

    return { load, clear, setPart: (index) => { part = index; draw(); } };
  }

  Object.assign(app, { trackOverlay });
  return {};
});
