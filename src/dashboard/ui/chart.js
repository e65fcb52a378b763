"use strict";
async function loadHistory(c) {
  const r = await getJSON("api/history?serial=" + encodeURIComponent(c.serial) + "&hours=24");
  if (!r.ok) return;
  c.history = r.body;
  drawChart(c, r.body);
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

// Last 24 h: shaded bands where heating or cooling ran, the temperature line, the target(s)
// dashed, hour labels along the bottom and the range of temperatures on the left.
function drawChart(c, h) {
  const d = c.data;
  const samples = (h && h.samples) || [];
  const W = 320, H = 150, L = 40, R = 312, T = 8, B = 122;
  const now = Date.now() / 1000, from = now - 24 * 3600;
  const conv = (v) => (isF(d) ? v * 9 / 5 + 32 : v);
  const values = [];
  for (const s of samples) for (const k of ["temp", "target", "low", "high"]) {
    if (typeof s[k] === "number" && (k === "temp" || usesTarget(s, k))) values.push(conv(s[k]));
  }
  let lo = values.length ? Math.floor(Math.min(...values) - 0.5) : conv(15);
  let hi = values.length ? Math.ceil(Math.max(...values) + 0.5) : conv(25);
  if (hi - lo < 2) { hi += 1; lo -= 1; }
  const x = (t) => L + (R - L) * (t - from) / (now - from);
  const y = (v) => B - (B - T) * (conv(v) - lo) / (hi - lo);
  const yRaw = (v) => B - (B - T) * (v - lo) / (hi - lo);
  // As /api/history counts run time: a sample holds until the next, for at most two intervals;
  // the last one until now, for at most one.
  const interval = (h && h.interval_seconds) || 300;
  const gap = 2 * interval;
  const name = d.name || d.serial;
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img",
    "data-samples": String(samples.length) });
  const title = svg("title", {});
  chart.append(title);
  // Bands: each run of heating (or cooling) samples as one rectangle.
  for (const kind of ["heating", "cooling"]) {
    let start = null;
    samples.forEach((s, i) => {
      const next = samples[i + 1];
      const end = next ? Math.min(next.t, s.t + gap) : Math.min(now, s.t + interval);
      if (s[kind] && start === null) start = s.t;
      const continues = s[kind] && next && next[kind] && next.t - s.t <= gap;
      if (start !== null && !continues) {
        const x0 = Math.max(L, x(start)), x1 = Math.min(R, x(s[kind] ? end : s.t));
        if (x1 > x0) {
          // A light band behind the lines, and a strong bar that does not rely on colour alone:
          // heating along the bottom of the chart, cooling along the top.
          chart.append(svg("rect", { class: "band " + kind, x: x0, y: T, width: x1 - x0, height: B - T,
            fill: kind === "heating" ? "#fde4e1" : "#dbe7fe" }));
          chart.append(svg("rect", { class: "bar " + kind, x: x0, y: kind === "heating" ? B - 4 : T, width: x1 - x0, height: 4,
            fill: kind === "heating" ? "#b42318" : "#1d4ed8" }));
        }
        start = null;
      }
    });
  }
  // Axes and labels
  chart.append(svg("line", { x1: L, y1: B, x2: R, y2: B, stroke: "#6b7280" }));
  chart.append(svg("line", { x1: L, y1: T, x2: L, y2: B, stroke: "#6b7280" }));
  for (const v of [lo, (lo + hi) / 2, hi]) {
    const t = svg("text", { x: L - 4, y: yRaw(v) + 3, "text-anchor": "end" });
    t.textContent = (isF(d) ? Math.round(v) : v.toFixed(1)) + "°";
    chart.append(t);
    chart.append(svg("line", { x1: L, y1: yRaw(v), x2: R, y2: yRaw(v), stroke: "#e5e7eb" }));
  }
  for (let k = 0; k <= 4; k++) {
    const t = from + k * 6 * 3600;
    const label = svg("text", { x: x(t), y: B + 14, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle" });
    label.textContent = k === 4 ? "now" : new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
    chart.append(label);
  }
  const line = (key, stroke, dash, cls) => {
    let path = "", last = null, points = 0;
    for (const s of samples) {
      const v = s[key];
      if (typeof v !== "number" || (key !== "temp" && !usesTarget(s, key))) { last = null; continue; }
      const cmd = last === null || s.t - last > gap ? "M" : "L";
      path += `${cmd}${x(s.t).toFixed(1)},${y(v).toFixed(1)} `;
      last = s.t; points++;
    }
    if (!points) return;
    const attrs = { class: cls, d: path.trim(), fill: "none", stroke, "stroke-width": key === "temp" ? 2 : 1.5, "data-points": points };
    if (dash) attrs["stroke-dasharray"] = "4 3";
    chart.append(svg("path", attrs));
  };
  line("target", "#b42318", true, "line target");
  line("low", "#b42318", true, "line target-low");
  line("high", "#1d4ed8", true, "line target-high");
  line("temp", "#111827", false, "line temperature");
  const temps = samples.filter((s) => typeof s.temp === "number").map((s) => s.temp);
  const heat = duration((h && h.heating_seconds) || 0), cool = duration((h && h.cooling_seconds) || 0);
  const summary = temps.length
    ? `${name}, last 24 hours: temperature from ${show(Math.min(...temps), d)} to ${show(Math.max(...temps), d)}; heating ran ${heat}, cooling ${cool}.`
    : `${name}, last 24 hours: no samples recorded yet.`;
  title.textContent = summary;
  chart.setAttribute("aria-label", summary);
  const caption = el("figcaption", {},
    el("div", { class: "legend" },
      el("span", {}, el("span", { class: "swatch temperature" }), " Temperature"),
      el("span", {}, el("span", { class: "swatch target" }), " Target (dashed)"),
      el("span", {}, el("span", { class: "swatch heating" }), " Heating (bar at the bottom)"),
      el("span", {}, el("span", { class: "swatch cooling" }), " Cooling (bar at the top)")),
    el("div", { class: "totals" }, temps.length
      ? `Last 24 h: heating ${heat}, cooling ${cool}.`
      : "No history yet: a sample is recorded every few minutes."));
  c.chart.replaceChildren(chart, caption);
  c.chart.dataset.drawn = "1";
}

// A sample's target lines: `target` outside range mode, `low`/`high` in it.
function usesTarget(s, key) {
  if (s.mode === "range") return key === "low" || key === "high";
  if (s.mode === "off") return false;
  return key === "target";
}
