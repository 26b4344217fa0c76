// Plays what the API signs for a <video> element (event clips, recording exports). A <video>
// cannot send the token, so the page asks for a short-lived signed URL (POST .../clip-url or
// .../export-url) and plays that; when the URL has expired by the time the player seeks or
// resumes, it asks for a new one and carries on from the same position. Adds app.signedPlayer().
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function player(app) {
  const L = globalThis.EdgeLogic;
  const RECOVER_EVERY_MS = 5000;  // a URL that fails again this soon is not an expired one

  // The signed URL from the API is absolute ("/api/v1/..."); the page asks relative to itself,
  // like every other request it makes, so it also works behind a proxy that adds a prefix.
  function relative(url) {
    return url.replace(/^\/+/, "");
  }

  async function signedUrl(signPath) {
    const result = await app.api(signPath, { method: "POST" });
    if (result.ok && result.body && typeof result.body.url === "string") return { url: relative(result.body.url), answer: result.body };
    return { problem: L.problemMessages(result.status, result.body).join(" ") };
  }

  // A player on `video`, saying what goes wrong in `note`. load(signPath) plays what signPath
  // signs and resolves to the API's answer (false when there is nothing to play); download(name)
  // saves it; stop() empties the player.
  function signedPlayer(video, note) {
    let current = null;  // the sign path of what plays
    let generation = 0;  // bumped by every load and stop, so an older answer is dropped
    let lastRecoveryMs = 0;

    async function load(signPath, startAtS) {
      const wanted = ++generation;
      const signed = await signedUrl(signPath);
      if (wanted !== generation) return false;
      if (!signed.url) {
        stop();
        note.textContent = signed.problem;
        return false;
      }
      current = signPath;
      note.textContent = "";
      if (startAtS) video.addEventListener("loadedmetadata", () => { video.currentTime = startAtS; }, { once: true });
      video.src = signed.url;
      video.hidden = false;
      return signed.answer;
    }

    function stop() {
      ++generation;
      current = null;
      video.pause();
      video.removeAttribute("src");
      video.load();
      video.hidden = true;
    }

    async function download(name) {
      if (!current) return;
      const signed = await signedUrl(current);
      if (!signed.url) {
        note.textContent = signed.problem;
        return;
      }
      const link = app.el("a");
      link.href = signed.url;
      link.download = name;
      link.hidden = true;
      document.body.append(link);
      link.click();
      link.remove();
    }

    video.addEventListener("error", () => {
      if (!current || !video.getAttribute("src")) return;
      const nowMs = Date.now();
      if (nowMs - lastRecoveryMs < RECOVER_EVERY_MS) {
        note.textContent = "The video cannot be played" + (video.error && video.error.message ? ": " + video.error.message : ".");
        return;
      }
      lastRecoveryMs = nowMs;
      const atS = video.currentTime, playing = !video.paused;
      load(current, atS).then((ok) => {
        if (ok && playing) video.play().catch(() => {});
      }).catch(app.handleError);
    });

    return { load, stop, download, playing: () => current };
  }

  Object.assign(app, { signedPlayer });
  return {};
});
