// A small line chart on a canvas: no library, no network. draw(canvas, series) where series is
// [{label, color, values:[numbers or null]}]; the x axis is the sample index.
"use strict";
window.whChart = (function () {
  function draw(canvas, series, opts) {
    opts = opts || {};
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 300, h = canvas.clientHeight || 160;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const pad = {l: 44, r: 8, t: 8, b: 22};
    let max = opts.max || 0;
    for (const s of series) for (const v of s.values) if (v != null && v > max) max = v;
    if (max <= 0) max = 1;
    const n = Math.max(2, ...series.map(s => s.values.length));
    const x = i => pad.l + (w - pad.l - pad.r) * i / (n - 1);
    const y = v => h - pad.b - (h - pad.t - pad.b) * v / max;
    g.strokeStyle = "#d0d7de"; g.fillStyle = "#57606a"; g.font = "11px system-ui"; g.lineWidth = 1;
    for (let k = 0; k <= 2; k++) {
      const v = max * k / 2;
      g.beginPath(); g.moveTo(pad.l, y(v)); g.lineTo(w - pad.r, y(v)); g.stroke();
      g.fillText(fmt(v), 2, y(v) + 4);
    }
    let lx = pad.l;
    for (const s of series) {
      g.strokeStyle = s.color; g.lineWidth = 2; g.beginPath();
      let started = false;
      s.values.forEach((v, i) => {
        if (v == null) { started = false; return; }
        if (started) g.lineTo(x(i), y(v)); else { g.moveTo(x(i), y(v)); started = true; }
      });
      g.stroke();
      g.fillStyle = s.color; g.fillRect(lx, h - 12, 10, 4);
      g.fillStyle = "#1b1f24";
      const last = s.values.length ? s.values[s.values.length - 1] : null;
      const text = s.label + " " + (last == null ? "–" : fmt(last));
      g.fillText(text, lx + 14, h - 7);
      lx += g.measureText(text).width + 30;
    }
    canvas.setAttribute("aria-label", (opts.title || "") + ": " + series.map(s => {
      const last = s.values.length ? s.values[s.values.length - 1] : null;
      return s.label + " " + (last == null ? "no data" : fmt(last));
    }).join(", "));
  }
  function fmt(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
    return Math.round(v * 100) / 100 + "";
  }
  return {draw, fmt};
})();
