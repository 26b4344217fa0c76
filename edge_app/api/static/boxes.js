// Boxes drawn by the page over a picture or a playing clip: the live view's detections and an
// event's track over its clip. One SVG in the picture's pixels (like the zones' overlay); each
// box has its label, and the labels are placed (EdgeLogic.placeLabels) so that none hides
// another when people stand close together. Adds app.drawBoxes(svg, boxes, width, height) and app.svgEl.
"use strict";

(globalThis.EdgeDashboardParts = globalThis.EdgeDashboardParts || []).push(function boxes(app) {
  const L = globalThis.EdgeLogic;
  const SVG = "http://www.w3.org/2000/svg";
  const CHAR_EM = 0.6;  // the width of a character of the label font, in font sizes (estimate)
  const PALETTE = ["#ff3838", "#ff9d97", "#ff701f", "#ffb21d", "#cfd231", "#48f90a", "#00d4bb", "#00c2ff", "#8438ff", "#ff37c7"];

  function svgEl(tag, attributes, className) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    if (className) node.setAttribute("class", className);
    return node;
  }

  // A label keeps its colour everywhere (the same hash on every page and for every camera).
  function colour(label) {
    let hash = 0;
    for (const ch of String(label)) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
    return PALETTE[hash % PALETTE.length];
  }

  // boxes: [{box: [x1, y1, x2, y2] in pixels of width x height, label, score (optional)}].
  function drawBoxes(svg, boxes, width, height) {
    const fontPx = Math.max(12, Math.round(Math.min(width, height) / 30));
    const padPx = Math.round(fontPx / 4);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("font-size", fontPx);
    // The best-scored boxes are placed first, so theirs are the labels next to their boxes.
    const order = boxes.map((b, i) => i).sort((a, b) => (boxes[b].score || 0) - (boxes[a].score || 0));
    const texts = boxes.map((b) => b.label + (typeof b.score === "number" ? " " + b.score.toFixed(2) : ""));
    // Each text measured as the browser draws it (an estimate while the SVG is not laid out).
    const probe = svgEl("text", { x: 0, y: 0 });
    svg.replaceChildren(probe);
    const textPx = texts.map((text) => {
      probe.textContent = text;
      return (probe.getComputedTextLength && probe.getComputedTextLength()) || text.length * fontPx * CHAR_EM;
    });
    const placed = L.placeLabels(order.map((i) => {
      const [x1, y1, x2, y2] = boxes[i].box;
      return { x1, y1, x2, y2, w: Math.ceil(textPx[i]) + 2 * padPx, h: fontPx + 2 * padPx };
    }), width, height);
    const frames = [], labels = [];
    order.forEach((i, k) => {
      const [x1, y1, x2, y2] = boxes[i].box, spot = placed[k], fill = colour(boxes[i].label);
      frames.push(svgEl("rect", { x: x1, y: y1, width: Math.max(0, x2 - x1), height: Math.max(0, y2 - y1), stroke: fill }, "det-box"));
      const group = svgEl("g", { "data-label": boxes[i].label }, "det-label");
      const text = svgEl("text", { x: spot.x + padPx, y: spot.y + padPx + fontPx * 0.85 });
      text.textContent = texts[i];
      group.append(svgEl("rect", { x: spot.x, y: spot.y, width: spot.w, height: spot.h, fill }), text);
      labels.push(group);
    });
    svg.replaceChildren(...frames, ...labels);  // every label above every box
  }

  Object.assign(app, { drawBoxes, svgEl });
  return {};
});
