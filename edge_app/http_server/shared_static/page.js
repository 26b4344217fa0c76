// What the appliance's dashboard and the fleet page share: requests carrying the API token, elements
// built from text (never parsed as HTML) and the link pill of the header. Both pages load it first.
"use strict";

(function () {
  class Unauthorized extends Error {}

  // The page's api(path, options): JSON asked for, the token that `token()` answers sent as a
  // bearer token, {status, ok, body} answered; a 401 throws Unauthorized so the page can ask for one.
  function apiClient(token) {
    return async function api(path, options = {}) {
      const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
      if (token()) headers.Authorization = "Bearer " + token();
      const response = await fetch(path, Object.assign({}, options, { headers }));
      if (response.status === 401) throw new Unauthorized();
      let body = null;
      try { body = await response.json(); } catch (_) { body = null; }
      return { status: response.status, ok: response.ok, body };
    };
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function setLink(text, cls) {
    const link = document.getElementById("link");
    link.textContent = text;
    link.className = "pill " + cls;
  }

  globalThis.EdgePage = { Unauthorized, apiClient, el, setLink };
})();
