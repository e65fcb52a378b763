"use strict";
// ---- the last 24 hours of a thermostat, hand-drawn SVG ----
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

// The drawing's height in CSS pixels whatever the card's width (chart.css sets the same): a wide
// card (an open schedule takes the whole row) gets a longer day, not a taller one.
const CHART_H = 176;
// A target held this long in all widens the axis; a shorter one off the temperatures' scale is
// clipped at the edge and marked with its value.
const CHART_HELD_LONG_ENOUGH = 3600;

// A sample's target lines: `target` outside range mode, `low`/`high` in it.
function usesTarget(s, key) {
  if (s.mode === "range") return key === "low" || key === "high";
  if (s.mode === "off") return false;
  return key === "target";
}
// The colour a target line takes: what the thermostat does to reach it.
function chartTargetKind(s, key) {
  if (key === "low") return "heat";
  if (key === "high") return "cool";
  return s.mode === "cool" ? "cool" : "heat";
}
const CHART_TARGETS = ["target", "low", "high"];

// The figure's parts are made once, so a redraw (every update of the card) keeps the focus and
// the reading under the pointer; only the drawing inside the SVG is replaced.
function chartParts(c) {
  if (c.chartParts) return c.chartParts;
  const id = (part) => part + "-" + c.serial;
  const p = {};
  p.svg = svg("svg", { class: "chart", "aria-hidden": "true", focusable: "false" });
  p.summary = el("span", { class: "sr", id: id("chart-summary") });
  p.plot = el("div", { class: "plot", tabindex: "0", role: "slider", "aria-valuemin": "0",
    "aria-describedby": id("chart-summary") }, p.svg);
  p.legend = el("div", { class: "legend" });
  p.totals = el("div", { class: "totals" });
  c.chart.replaceChildren(p.plot, el("figcaption", {}, p.legend, p.totals, p.summary));
  c.chartParts = p;
  c.chartAt = null;
  // Pointer or finger: the reading nearest the x under it. A touch that moves sideways reads
  // along the day; one that moves up or down scrolls the page (touch-action in chart.css).
  const at = (e) => {
    const g = c.chartGeometry;
    if (!g) return;
    const box = p.svg.getBoundingClientRect();
    if (!box.width) return;
    const px = (e.clientX - box.left) * g.W / box.width;
    chartPointAt(c, chartNearest(g.samples, g.t(px)));
  };
  p.plot.addEventListener("pointermove", at);
  p.plot.addEventListener("pointerdown", at);
  p.plot.addEventListener("pointerleave", (e) => { if (e.pointerType === "mouse" && document.activeElement !== p.plot) chartPointAt(c, null); });
  // Keyboard: the chart is a slider over its readings, as a screen reader announces it.
  p.plot.addEventListener("focus", () => { if (c.chartAt === null) chartPointAt(c, chartLast(c)); });
  p.plot.addEventListener("blur", () => chartPointAt(c, null));
  p.plot.addEventListener("keydown", (e) => {
    const g = c.chartGeometry;
    if (!g || !g.samples.length) return;
    const n = g.samples.length;
    const i = c.chartAt === null ? n - 1 : chartNearest(g.samples, c.chartAt);
    const hour = (dir) => chartNearest(g.samples, g.samples[i].t + dir * 3600);
    const to = { ArrowLeft: i - 1, ArrowDown: i - 1, ArrowRight: i + 1, ArrowUp: i + 1,
      PageDown: hour(-1), PageUp: hour(1), Home: 0, End: n - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    chartPointAt(c, Math.max(0, Math.min(n - 1, to)));
  });
  // The drawing follows the card's width (a window resized, the schedule opened or closed).
  if (window.ResizeObserver) {
    new ResizeObserver(() => {
      if (c.chart.dataset.drawn && Math.round(c.chart.clientWidth) !== c.chartWidth) drawChart(c, c.history);
    }).observe(c.chart);
  }
  return p;
}
const chartLast = (c) => (c.chartGeometry && c.chartGeometry.samples.length ? c.chartGeometry.samples.length - 1 : null);

function chartNearest(samples, t) {
  let best = null, bestD = Infinity;
  samples.forEach((s, i) => { const dt = Math.abs(s.t - t); if (dt < bestD) { bestD = dt; best = i; } });
  return best;
}

// What one sample says: its time, then "20.4°C", "target 21.0°C", "heating".
// The chart's label says it shorter: "14:35 · 20.4°C · target 21.0°C", "… · 20.0–24.0°C".
function chartReading(s, d) {
  const temp = typeof s.temp === "number" ? show(s.temp, d) : "no temperature";
  const values = [temp], short = [temp];
  if (s.mode === "off") { values.push("off"); short.push("off"); }
  else if (s.mode === "range" && typeof s.low === "number" && typeof s.high === "number") {
    values.push("heat to " + show(s.low, d) + ", cool to " + show(s.high, d));
    short.push(show(s.low, d).replace(/°.$/, "") + "–" + show(s.high, d));
  } else if (typeof s.target === "number") {
    values.push("target " + show(s.target, d));
    short.push("target " + show(s.target, d));
  }
  const doing = s.heating ? "heating" : s.cooling ? "cooling" : s.fan ? "fan" : null;
  return { time: chartClock(s.t), values, short, doing };
}
const chartClock = (t) => {
  const when = new Date(t * 1000);
  return String(when.getHours()).padStart(2, "0") + ":" + String(when.getMinutes()).padStart(2, "0");
};

// Shows (or, with null, hides) the reading of sample `i`: a line, a dot and the values above.
function chartPointAt(c, i) {
  const p = c.chartParts, g = c.chartGeometry;
  if (!p || !g) return;
  const old = p.svg.querySelector(".readout");
  if (old) old.remove();
  if (i === null || !g.samples[i]) {
    c.chartAt = null;
    p.plot.removeAttribute("aria-valuenow");
    setAttr(p.plot, "aria-valuetext", "Now. Use the arrow keys to read the last 24 hours.");
    return;
  }
  const s = g.samples[i];
  c.chartAt = s.t;
  const r = chartReading(s, c.data);
  const text = r.time + ": " + [...r.values, r.doing].filter(Boolean).join(", ");
  setAttr(p.plot, "aria-valuenow", String(i));
  setAttr(p.plot, "aria-valuetext", text);
  const x = g.x(s.t);
  const group = svg("g", { class: "readout", "data-t": String(s.t) });
  group.append(svg("line", { class: "cursor", x1: x, y1: g.T, x2: x, y2: g.B }));
  if (typeof s.temp === "number") group.append(svg("circle", { class: "dot", cx: x, cy: g.yClamped(s.temp), r: 4 }));
  const label = svg("text", { class: "value", y: 14 });
  label.textContent = [r.time, ...r.short].join(" · ");
  group.append(label);
  p.svg.append(group);
  // Above the plot, over the pointer but inside the drawing.
  const w = label.getComputedTextLength ? label.getComputedTextLength() : 0;
  const left = Math.max(2, Math.min(g.W - w - 10, x - w / 2 - 4));
  label.setAttribute("x", left + 4);
  group.insertBefore(svg("rect", { class: "tip", x: left, y: 1, width: w + 8, height: 18, rx: 4 }), label);
}

// The room's temperature as one point per column of two pixels: the mean of the readings
// that fall in it. A day holds hundreds of readings, a heating cycle every few minutes and the
// sensor's tenth-of-a-degree steps; drawn one by one they fill a band instead of a line.
// Readings are still read one by one under the pointer.
// A column's point is at the mean of its readings' times; where readings stop for longer than
// `gap`, a point without a temperature breaks the line, as it does between raw readings.
function chartColumns(samples, x, gap) {
  const out = [];
  let col = null, sum = 0, n = 0, sumT = 0, last = null;
  const close = () => { if (n) out.push({ t: sumT / n, temp: sum / n, column: true }); sum = sumT = n = 0; };
  for (const s of samples) {
    const broken = typeof s.temp !== "number" || (last && s.t - last.t > gap);
    if (broken) { close(); col = null; out.push({ t: s.t }); }
    if (typeof s.temp !== "number") { last = null; continue; }
    const c = Math.floor(x(s.t) / 2);
    if (c !== col) { close(); col = c; }
    sum += s.temp; sumT += s.t; n++; last = s;
  }
  close();
  return out;
}

// Last 24 h: shaded bands where heating or cooling ran, the temperature line, the target(s)
// dashed in the colour of what reaches them, hour ticks along the bottom and degrees on the left.
function drawChart(c, h) {
  const d = c.data;
  const p = chartParts(c);
  const now = Date.now() / 1000, from = now - 24 * 3600;
  const interval = (h && h.interval_seconds) || 300;
  // As /api/history counts run time: a sample holds until the next, for at most two intervals;
  // the last one until now, for at most one.
  const gap = 2 * interval;
  const samples = ((h && h.samples) || []).filter((s) => s.t >= from - interval && s.t <= now + interval);
  const held = (i) => {
    const next = samples[i + 1];
    return next ? Math.min(next.t - samples[i].t, gap) : Math.min(Math.max(0, now - samples[i].t), interval);
  };
  const f = isF(d);
  const conv = (v) => (f ? v * 9 / 5 + 32 : v);
  const W = Math.max(200, Math.round(c.chart.clientWidth || 320)), H = CHART_H;
  c.chartWidth = Math.round(c.chart.clientWidth || 0);
  const L = f ? 42 : 46, R = W - 6, T = 22, B = H - 24;

  // The scale: the room's temperatures, and the targets held long enough to matter.
  const temps = samples.filter((s) => typeof s.temp === "number").map((s) => conv(s.temp));
  // The card's reading is the latest, often newer than the last sample (one every few
  // minutes): on the chart at "now" whatever it is, so the scale holds it.
  const latest = typeof d.current_temperature === "number" ? d.current_temperature : null;
  if (latest !== null) temps.push(conv(latest));
  const heldFor = new Map();
  samples.forEach((s, i) => {
    for (const k of CHART_TARGETS) {
      if (typeof s[k] !== "number" || !usesTarget(s, k)) continue;
      const v = Math.round(conv(s[k]) * 10) / 10;
      heldFor.set(v, (heldFor.get(v) || 0) + held(i));
    }
  });
  const shown = [...temps];
  for (const [v, secs] of heldFor) if (secs >= CHART_HELD_LONG_ENOUGH || !temps.length) shown.push(v);
  let lo = shown.length ? Math.min(...shown) : conv(18), hi = shown.length ? Math.max(...shown) : conv(22);
  const minSpan = f ? 6 : 3;
  if (hi - lo < minSpan) { const mid = (hi + lo) / 2; lo = mid - minSpan / 2; hi = mid + minSpan / 2; }
  const span = hi - lo + 1;
  const step = f ? (span <= 10 ? 2 : span <= 25 ? 5 : 10) : (span <= 5 ? 1 : span <= 10 ? 2 : 5);
  lo = Math.floor((lo - 0.3) / step) * step;
  hi = Math.ceil((hi + 0.3) / step) * step;
  const x = (t) => L + (R - L) * (t - from) / (now - from);
  const tOf = (px) => from + (px - L) * (now - from) / (R - L);
  const yRaw = (v) => B - (B - T) * (v - lo) / (hi - lo);
  const yClamped = (v) => Math.max(T, Math.min(B, yRaw(conv(v))));
  c.chartGeometry = { W, H, L, R, T, B, x, t: tOf, yClamped, samples };

  const parts = [];
  // Bands: the day in spans of 15, 30 or 60 minutes (the fewest minutes that are 6 px wide),
  // each shaded as high as the share of it the heating ran (from the bottom of the plot) or the
  // cooling (from the top), with a strong bar along that edge wherever it ran at all, so a
  // thermostat that cycles every few minutes reads as how much it ran, not as hairlines, and
  // the bar does not rely on colour alone.
  const bucket = [900, 1800, 3600].find((n) => (n * (R - L)) / (now - from) >= 6) || 3600;
  // Counted back from now, so every bucket is whole (the day is a whole number of them).
  const buckets = Math.ceil((now - from) / bucket), start = now - buckets * bucket;
  for (const kind of ["heating", "cooling"]) {
    const ran = new Array(buckets).fill(0);
    samples.forEach((s, i) => {
      if (!s[kind]) return;
      for (let a = Math.max(s.t, from), b = Math.min(s.t + held(i), now); a < b;) {
        const k = Math.floor((a - start) / bucket), end = Math.min(b, start + (k + 1) * bucket);
        if (k >= 0 && k < buckets) ran[k] += end - a;
        a = end;
      }
    });
    ran.forEach((secs, k) => {
      const t0 = Math.max(from, start + k * bucket), t1 = Math.min(now, start + (k + 1) * bucket);
      if (secs <= 0 || t1 <= t0) return;
      const x0 = x(t0), w = x(t1) - x0, share = Math.min(1, secs / (t1 - t0));
      const h = Math.max(4, share * (B - T)), top = kind === "heating" ? B - h : T;
      parts.push(svg("rect", { class: "band " + kind, x: x0, y: top, width: w, height: h, "data-share": share.toFixed(2) }));
      parts.push(svg("rect", { class: "bar " + kind, x: x0, y: kind === "heating" ? B - 4 : T, width: w, height: 4 }));
    });
  }
  // Degrees: a line and a label at every step, with the unit.
  for (let v = lo; v <= hi + 1e-9; v += step) {
    parts.push(svg("line", { class: "grid", x1: L, y1: yRaw(v), x2: R, y2: yRaw(v) }));
    const t = svg("text", { class: "tick y", x: L - 5, y: yRaw(v) + 4, "text-anchor": "end" });
    t.textContent = v + (f ? "°F" : "°C");
    parts.push(t);
  }
  // Hours: on the hour, every 1 to 6 hours as the width allows, and "now" at the right.
  const perHour = (R - L) / 24;
  const every = [1, 2, 3, 4, 6, 12].find((n) => n * perHour >= 40) || 12;
  const first = new Date(from * 1000);
  first.setMinutes(0, 0, 0);
  for (let when = new Date(first.getTime() + 3600000); when.getTime() / 1000 <= now; when = new Date(when.getTime() + 3600000)) {
    if (when.getHours() % every) continue;
    const tx = x(when.getTime() / 1000);
    parts.push(svg("line", { class: "hour", x1: tx, y1: B, x2: tx, y2: B + 4 }));
    if (tx < L + 16 || tx > R - 48) continue;
    const label = svg("text", { class: "tick x", x: tx, y: B + 17, "text-anchor": "middle" });
    label.textContent = String(when.getHours()).padStart(2, "0") + ":00";
    parts.push(label);
  }
  const nowLabel = svg("text", { class: "tick x now", x: R, y: B + 17, "text-anchor": "end" });
  nowLabel.textContent = "now";
  parts.push(nowLabel);
  parts.push(svg("line", { class: "axis", x1: L, y1: B, x2: R, y2: B }));
  parts.push(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: B }));

  // Lines: a target in the colour of what reaches it (heat red, cool blue), clipped at the
  // plot's edge where it is off the scale, with a mark and its value there.
  const marks = [], drawnKinds = new Set();
  const line = (key, kind, cls, rows = samples) => {
    let path = "", lastT = null, points = 0, off = null;
    const flush = () => {
      if (!off) return;
      marks.push(off);
      off = null;
    };
    rows.forEach((s, i) => {
      const v = s[key];
      const fits = typeof v === "number" && (key === "temp" || (usesTarget(s, key) && chartTargetKind(s, key) === kind));
      if (!fits) { lastT = null; flush(); return; }
      // Columns carry their breaks themselves (chartColumns); raw readings break at a gap.
      const cmd = lastT === null || (!s.column && s.t - lastT > gap) ? "M" : "L";
      path += `${cmd}${x(s.t).toFixed(1)},${yClamped(v).toFixed(1)} `;
      lastT = s.t; points++;
      const raw = yRaw(conv(v));
      const side = raw < T ? "above" : raw > B ? "below" : null;
      if (side && key !== "temp") {
        if (off && off.side === side && off.v === v) off.t1 = s.t + held(i);
        else { flush(); off = { side, v, t0: s.t, t1: s.t + held(i), kind }; }
      } else flush();
    });
    flush();
    if (!points) return;
    if (kind) drawnKinds.add(kind);
    const attrs = { class: cls, d: path.trim(), "data-points": points };
    parts.push(svg("path", attrs));
  };
  for (const kind of ["heat", "cool"]) {
    line("target", kind, "line target " + kind);
    line(kind === "heat" ? "low" : "high", kind, "line target-" + (kind === "heat" ? "low" : "high") + " " + kind);
  }
  const columns = chartColumns(samples, x, gap);
  const last = samples.length ? samples[samples.length - 1] : null;
  // The line goes on to the latest reading when the last sample is recent enough to join it.
  if (latest !== null && last && typeof last.temp === "number" && now - last.t <= gap && now > last.t) {
    columns.push({ t: now, temp: latest, column: true });
  }
  line("temp", null, "line temperature", columns);
  if (latest !== null) {
    parts.push(svg("circle", { class: "latest", cx: x(now), cy: yClamped(latest), r: 3.5, "data-value": String(latest) }));
  }
  for (const m of marks) {
    const mx = Math.max(L + 4, Math.min(R - 4, x((m.t0 + Math.min(m.t1, now)) / 2)));
    const up = m.side === "above";
    const tip = up ? T : B;
    const pts = up ? `${mx - 5},${tip + 7} ${mx + 5},${tip + 7} ${mx},${tip}` : `${mx - 5},${tip - 7} ${mx + 5},${tip - 7} ${mx},${tip}`;
    parts.push(svg("polygon", { class: "offscale " + m.kind, points: pts, "data-value": String(m.v) }));
    const right = mx < R - 60;
    const label = svg("text", { class: "tick offscale-value", x: right ? mx + 8 : mx - 8, y: up ? tip + 11 : tip - 3,
      "text-anchor": right ? "start" : "end" });
    label.textContent = show(m.v, d);
    parts.push(label);
  }

  setAttr(p.svg, "viewBox", `0 0 ${W} ${H}`);
  setAttr(p.svg, "data-samples", String(samples.length));
  setAttr(p.svg, "data-scale", lo + " " + hi);
  p.svg.replaceChildren(...parts);

  // In words: the summary a screen reader gives, the totals, a legend of what is drawn.
  const name = d.name || d.serial;
  const shownTemps = samples.filter((s) => typeof s.temp === "number").map((s) => s.temp);
  const heat = duration((h && h.heating_seconds) || 0), cool = duration((h && h.cooling_seconds) || 0);
  setText(p.summary, shownTemps.length
    ? `Last 24 hours: temperature from ${show(Math.min(...shownTemps), d)} to ${show(Math.max(...shownTemps), d)}; heating ran ${heat}, cooling ${cool}.`
    : "Last 24 hours: no samples recorded yet.");
  setAttr(p.plot, "aria-label", "History of " + name);
  setAttr(p.plot, "aria-valuemax", String(Math.max(0, samples.length - 1)));
  setText(p.totals, shownTemps.length
    ? `Last 24 h: heating ${heat}, cooling ${cool}.`
    : "No history yet: a sample is recorded every few minutes.");
  const heats = d.can_heat !== false || samples.some((s) => s.heating);
  const cools = !!d.can_cool || samples.some((s) => s.cooling);
  // The target's swatch in the colours its lines were drawn in (or, with none, the mode's).
  const targetKinds = drawnKinds.size ? ["heat", "cool"].filter((k) => drawnKinds.has(k)).join(" ")
    : d.mode === "range" ? "heat cool" : d.mode === "cool" ? "cool" : "heat";
  const legendKey = [heats, cools, targetKinds].join();
  if (p.legend.dataset.key !== legendKey) {
    p.legend.dataset.key = legendKey;
    const item = (cls, text) => el("span", { class: "item" }, el("span", { class: "swatch " + cls, "aria-hidden": "true" }), text);
    p.legend.replaceChildren(item("temperature", "Temperature"), item("target " + targetKinds, "Target"),
      ...(heats ? [item("heating", "Heating")] : []), ...(cools ? [item("cooling", "Cooling")] : []));
  }
  c.chart.dataset.drawn = "1";
  // The reading shown before the redraw stays, at the same time of day.
  chartPointAt(c, c.chartAt === null ? null : chartNearest(samples, c.chartAt));
}
