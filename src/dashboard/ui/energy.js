"use strict";
// ---- energy: how long the heating, the cooling and the fan ran, per day and per month ----
// From /api/energy (docs/energy.md): one row per local day, ascending, today's row live, and the
// server's totals of the period, of the period before it and of the home. Drawn when the section
// is opened: the totals in numbers, one sentence comparing the period with the one before, heat
// and cool stacked per day (or month), the fan beside them, the outdoor average as dots on a
// scale of its own; the rows as a CSV file. A table of the same numbers is there for screen
// readers. Every total is the server's (the page only adds a month's days up into its bar).
// The periods: [key, button, the period's name, the period before's name, days back to the first].
const ENERGY_VIEWS = [["week", "7 days", "Last 7 days", "the 7 days before", 6],
  ["month", "30 days", "Last 30 days", "the 30 days before", 29],
  ["year", "12 months", "Last 12 months", "the 12 months before", 364]];
// The period before's column heading: "7 days before".
const beforeHeading = (v) => v[3].replace(/^the /, "").replace(/^./, (c) => c.toUpperCase());
const ENERGY_H = 176, ENERGY_REFRESH_MS = 300000;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const energyView = (key) => ENERGY_VIEWS.find((v) => v[0] === key);

function buildEnergy(c) {
  const id = (part) => part + "-" + c.serial;
  const e = { view: "week", days: null, timer: null };
  c.energy = e;
  e.buttons = ENERGY_VIEWS.map(([key, label]) => el("button", { type: "button", "data-view": key,
    "aria-pressed": String(key === e.view), onclick: () => { e.view = key; drawEnergy(c); loadEnergy(c); } }, label));
  e.group = el("div", { class: "group segmented", role: "group", id: id("energy-period") }, ...e.buttons);
  e.csv = el("button", { type: "button", id: id("energy-csv"), onclick: () => downloadEnergy(c) }, "Download CSV");
  e.week = el("p", { class: "energy-week", id: id("energy-week") });
  // The period's totals, the period before's and the home's, as the server sums them.
  e.totals = el("table", { class: "energy-totals", id: id("energy-totals") });
  // Said when the days are counted in UTC because the thermostat's zone is unset or unknown.
  e.zoneNote = el("p", { class: "note", id: id("energy-zone") });
  e.svg = svg("svg", { class: "energy-chart", role: "img", "aria-labelledby": id("energy-summary") });
  e.summary = el("span", { class: "sr", id: id("energy-summary") });
  // In a box of its own: a table is never narrower than its cells, whatever its width says.
  e.table = el("table", { id: id("energy-table") });
  e.legend = el("div", { class: "legend energy-legend" });
  e.status = el("p", { class: "note", role: "status", id: id("energy-status") });
  const body = el("div", { class: "energy-body" },
    el("div", { class: "controls" }, e.group, e.csv), e.totals, e.week, e.zoneNote,
    el("figure", {}, e.svg, e.summary, e.legend), el("div", { class: "sr" }, e.table), e.status);
  const details = el("details", { class: "energy", id: id("energy") }, el("summary", {}, "Energy"), body);
  details.addEventListener("toggle", () => {
    clearInterval(e.timer);
    e.timer = null;
    if (!details.open) return;
    loadEnergy(c);
    e.timer = setInterval(() => loadEnergy(c), ENERGY_REFRESH_MS);
  });
  e.details = details;
  return details;
}

// Names that carry the thermostat's, for screen readers; called on every card update.
function labelEnergy(c) {
  const e = c.energy, name = nameOf(c);
  if (!e) return;
  setAttr(e.group, "aria-label", "Period of the energy history of " + name);
  setAttr(e.csv, "aria-label", "Download the energy history of " + name + " as CSV");
}

const isoDay = (t) => {
  const d = new Date(t);
  return d.getFullYear() + "-" + String(d.getMonth() + 1).padStart(2, "0") + "-" + String(d.getDate()).padStart(2, "0");
};
// The date `n` days before today, as the API writes dates: today as it is in the zone the
// thermostat's days are kept in (the answer's `time_zone`), else in the browser's.
function daysAgo(n, zone) {
  let today = isoDay(Date.now());
  if (zone) {
    try {
      today = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date());
    } catch (e) { /* a zone this browser does not know: its own */ }
  }
  const d = new Date(today + "T12:00:00Z");
  d.setUTCDate(d.getUTCDate() - n);
  return d.toISOString().slice(0, 10);
}
const dateOf = (text) => new Date(text + "T12:00:00Z");

// The days a view shows, as the API takes them: the last 7, 30 or 365 whole days, up to
// yesterday. Today is not over: counted in, it would make every period look shorter than the
// whole one before it (the card's "Last 24 h" says today's).
function energyPeriod(view, zone) {
  const n = energyView(view)[4];
  return { from: daysAgo(n + 1, zone), to: daysAgo(1, zone) };
}

// Loads the chosen view's period; an answer for a view no longer chosen is dropped (the load
// of the one chosen since is on its way).
async function loadEnergy(c) {
  const e = c.energy, view = e.view, asked = energyPeriod(view, e.zone);
  const r = await getJSON("api/energy?serial=" + encodeURIComponent(c.serial) + "&from=" + asked.from + "&to=" + asked.to)
    .catch((err) => ({ ok: false, status: 0, body: { error: err.message } }));
  if (e.view !== view) return;
  if (!r.ok) {
    setText(e.status, r.status === 404 ? "No energy history for this thermostat yet."
      : "The energy history did not load: " + (r.body.error || r.body.message || "HTTP " + r.status));
    return;
  }
  const zone = r.body.time_zone || null;
  // Asked before the thermostat's zone was known, and its today is another day: again, in it.
  if (zone !== e.zone && energyPeriod(view, zone).to !== asked.to) {
    e.zone = zone;
    loadEnergy(c);
    return;
  }
  e.zone = zone;
  e.answer = r.body;
  e.answerView = view;
  e.days = r.body.days || [];
  const zoneAsked = r.body.structure_time_zone;
  setText(e.zoneNote, r.body.time_zone_source !== "fallback" ? ""
    : zoneAsked ? `Days are counted in UTC: hearth does not know this thermostat's time zone, ${zoneAsked}.`
    : "Days are counted in UTC: this thermostat reports no time zone.");
  setText(e.status, e.days.length ? "" : "No energy history yet: it starts with the thermostat's next report.");
  drawEnergy(c);
}

// The bars of a view: the last 7 or 30 days (a day without a row is an empty slot), or the
// last 12 months with each month's days summed.
function energyBars(e) {
  const byDate = new Map((e.days || []).map((r) => [r.date, r]));
  if (e.view !== "year") {
    const n = e.view === "week" ? 7 : 30;
    return Array.from({ length: n }, (_, i) => {
      const date = daysAgo(n - 1 - i, e.zone);
      const d = dateOf(date);
      const label = e.view === "week" ? DAYS[(d.getUTCDay() + 6) % 7].slice(0, 3) : String(d.getUTCDate());
      return { key: date, label, long: date, row: byDate.get(date) || null };
    });
  }
  const now = dateOf(daysAgo(0, e.zone));
  return Array.from({ length: 12 }, (_, i) => {
    const m = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11 + i, 15));
    const key = m.toISOString().slice(0, 7);
    const rows = (e.days || []).filter((r) => r.date.startsWith(key));
    return { key, label: MONTHS[m.getUTCMonth()], long: MONTHS[m.getUTCMonth()] + " " + m.getUTCFullYear(), row: rows.length ? monthRow(rows) : null };
  });
}

// A month's bar: its days' hours stacked, its outdoor dot at the mean of the days' averages.
function monthRow(rows) {
  const out = { heat_s: 0, cool_s: 0, fan_s: 0 };
  for (const r of rows) for (const k of Object.keys(out)) out[k] += r[k] || 0;
  const outdoor = rows.map((r) => r.outdoor_avg_c).filter((v) => typeof v === "number");
  out.outdoor_avg_c = outdoor.length ? outdoor.reduce((a, b) => a + b, 0) / outdoor.length : null;
  return out;
}

const hours = (s) => s / 3600;
function hoursText(s) {
  const h = hours(s);
  return s === 0 ? "0 h" : h >= 10 ? Math.round(h) + " h" : h >= 1 ? h.toFixed(1) + " h" : Math.round(s / 60) + " min";
}

// "Heating ran 3 h less than in the 7 days before; it was 2° warmer outside.": the server's totals
// of the chosen period against those of the period before it, as far as the history goes.
function energySentence(c) {
  const e = c.energy, d = c.data, a = e.answer.total, b = e.answer.before;
  const than = energyView(e.answerView)[3];
  if (!b || !b.days) return "No earlier data to compare with.";
  const parts = [];
  const ran = (what, key) => {
    const diff = hours(a[key] - b[key]);
    if (Math.abs(diff) < 0.5) return `${what} ran about as long as in ${than}`;
    const n = Math.abs(diff) >= 10 ? Math.round(Math.abs(diff)) : Math.round(Math.abs(diff) * 2) / 2;
    return `${what} ran ${n} h ${diff < 0 ? "less" : "more"} than in ${than}`;
  };
  if (d.can_heat !== false || a.heat_s || b.heat_s) parts.push(ran("heating", "heat_s"));
  if (a.cool_s || b.cool_s) parts.push(ran("cooling", "cool_s"));
  if (typeof a.outdoor_avg_c === "number" && typeof b.outdoor_avg_c === "number") {
    const diff = toScale(a.outdoor_avg_c, d) - toScale(b.outdoor_avg_c, d);
    const step = Math.round(Math.abs(diff));
    parts.push(step < 1 ? "it was about as warm outside" : `it was ${step}° ${diff > 0 ? "warmer" : "colder"} outside`);
  }
  if (!parts.length) return "Nothing ran in either period.";
  const text = parts.join("; ") + (b.days < a.days ? ` (${b.days} of its days recorded).` : ".");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// The totals in numbers: this thermostat's heating and cooling in the period and the period
// before, then the home's (every thermostat the page lists) when it has more than this one.
function drawTotals(c) {
  const e = c.energy, d = c.data, t = e.answer, v = energyView(e.answerView);
  const cell = (sum, key) => {
    if (!sum) return el("td", {}, "–");
    if (!sum.days) return el("td", { class: "none" }, "no data");
    return el("td", { "data-s": String(sum[key]) }, hoursText(sum[key]));
  };
  const rows = [];
  const row = (label, who, key) => rows.push(el("tr", { "data-row": label.toLowerCase().replace(/ /g, "-") },
    el("th", { scope: "row" }, label), cell(who.total, key), cell(who.before, key)));
  const cools = d.can_cool || t.total.cool_s > 0 || (t.before && t.before.cool_s > 0);
  row("Heating", t, "heat_s");
  if (cools) row("Cooling", t, "cool_s");
  if (t.home && t.home.thermostats > 1) {
    row("Home heating", t.home, "heat_s");
    if (t.home.total.cool_s > 0 || (t.home.before && t.home.before.cool_s > 0)) row("Home cooling", t.home, "cool_s");
  }
  e.totals.replaceChildren(
    el("caption", { class: "sr" }, "Hours of heating and cooling of " + nameOf(c) + ", " + v[2].toLowerCase() + " and " + v[3]),
    el("tr", {}, el("td", {}), el("th", { scope: "col" }, v[2]), el("th", { scope: "col" }, beforeHeading(v))),
    ...rows);
}

// Labels along the bottom that never touch: one every `every` bars (counted back from the last,
// today's), `every` the fewest that leaves each label its width.
function labelEvery(bars, slot) {
  const widest = Math.max(...bars.map((b) => b.label.length)) * 7.5 + 8;
  return [1, 2, 3, 4, 5, 6, 7, 10, 15].find((n) => n * slot >= widest) || 30;
}

function drawEnergy(c) {
  const e = c.energy, d = c.data;
  if (!e) return;
  for (const b of e.buttons) setAttr(b, "aria-pressed", String(b.dataset.view === e.view));
  // Until the chosen view's period has loaded, the last one drawn stays.
  if (!e.answer || e.answerView !== e.view) return;
  setText(e.week, energySentence(c));
  drawTotals(c);
  const bars = energyBars(e);
  const W = Math.max(280, Math.round(e.svg.getBoundingClientRect().width) || 320);
  const H = ENERGY_H, L = 40, R = W - 34, T = 10, B = H - 24;
  const top = Math.max(1, ...bars.map((b) => (b.row ? hours(Math.max(b.row.heat_s + b.row.cool_s, b.row.fan_s)) : 0)));
  const step = [1, 2, 4, 6, 8, 12, 24, 48, 100, 200, 400, 800].find((s) => top / s <= 4) || 1000;
  const max = Math.ceil(top / step) * step;
  const y = (h) => B - (h / max) * (B - T);
  const slot = (R - L) / bars.length;
  const parts = [];
  for (let h = 0; h <= max; h += step) {
    parts.push(svg("line", { class: "grid", x1: L, y1: y(h), x2: R, y2: y(h) }));
    const t = svg("text", { class: "tick", x: L - 6, y: y(h) + 4, "text-anchor": "end" });
    t.textContent = h + " h";
    parts.push(t);
  }
  // The outdoor average on its own scale, at the right.
  const outdoors = bars.filter((b) => b.row && typeof b.row.outdoor_avg_c === "number").map((b) => toScale(b.row.outdoor_avg_c, d));
  let oy = null;
  if (outdoors.length) {
    const lo = Math.floor(Math.min(...outdoors) - 1), hi = Math.ceil(Math.max(...outdoors) + 1);
    oy = (v) => B - ((v - lo) / (hi - lo)) * (B - T);
    for (const v of [lo, hi]) {
      const t = svg("text", { class: "tick outdoor", x: R + 4, y: oy(v) + 4 });
      t.textContent = Math.round(v) + "°";
      parts.push(t);
    }
  }
  const every = labelEvery(bars, slot);
  bars.forEach((b, i) => {
    const x0 = L + i * slot, w = Math.max(2, slot * 0.62), fanW = Math.max(1, slot * 0.16);
    if (b.row) {
      const heat = hours(b.row.heat_s), cool = hours(b.row.cool_s), fan = hours(b.row.fan_s);
      const bar = (cls, h, from, x, width) => {
        if (h <= 0) return;
        const r = svg("rect", { class: "bar " + cls, x: x.toFixed(1), y: y(from + h).toFixed(1), width: width.toFixed(1),
          height: Math.max(0.5, y(from) - y(from + h)).toFixed(1), "data-key": b.key });
        parts.push(r);
      };
      bar("heat", heat, 0, x0 + slot * 0.08, w);
      bar("cool", cool, heat, x0 + slot * 0.08, w);
      bar("fan", fan, 0, x0 + slot * 0.08 + w + 1, fanW);
      if (oy && typeof b.row.outdoor_avg_c === "number") {
        parts.push(svg("circle", { class: "outdoor", cx: (x0 + slot / 2).toFixed(1), cy: oy(toScale(b.row.outdoor_avg_c, d)).toFixed(1), r: 2.5 }));
      }
    }
    if ((bars.length - 1 - i) % every === 0) {
      const t = svg("text", { class: "tick x", x: (x0 + slot / 2).toFixed(1), y: B + 16, "text-anchor": "middle" });
      t.textContent = b.label;
      parts.push(t);
    }
  });
  parts.push(svg("line", { class: "axis", x1: L, y1: B, x2: R, y2: B }));
  setAttr(e.svg, "viewBox", `0 0 ${W} ${H}`);
  setAttr(e.svg, "data-bars", String(bars.filter((b) => b.row).length));
  e.svg.replaceChildren(...parts);

  const period = energyView(e.view)[2].toLowerCase();
  const all = e.answer.total;
  setText(e.summary, `Energy history of ${nameOf(c)}, ${period}: heating ${hoursText(all.heat_s)}, cooling ${hoursText(all.cool_s)}, fan ${hoursText(all.fan_s)}.`);
  const key = [["heat", "Heating"], ["cool", "Cooling"], ["fan", "Fan"]].filter(([k]) => k !== "cool" || d.can_cool)
    .filter(([k]) => k !== "fan" || d.has_fan);
  if (outdoors.length) key.push(["outdoor", "Outside"]);
  e.legend.replaceChildren(...key.map(([k, label]) => el("span", {}, el("span", { class: "swatch energy-" + k }), " " + label)));
  e.table.replaceChildren(
    el("caption", {}, "Energy history of " + nameOf(c) + ", " + period),
    el("tr", {}, ...["Period", "Heating", "Cooling", "Fan", "Outside"].map((h) => el("th", { scope: "col" }, h))),
    ...bars.filter((b) => b.row).map((b) => el("tr", {}, el("th", { scope: "row" }, b.long),
      el("td", {}, hoursText(b.row.heat_s)), el("td", {}, hoursText(b.row.cool_s)), el("td", {}, hoursText(b.row.fan_s)),
      el("td", {}, typeof b.row.outdoor_avg_c === "number" ? show(b.row.outdoor_avg_c, d) : "–"))));
}

// The rows as a file: fetched with the page's key (a plain link would not send it).
async function downloadEnergy(c) {
  const e = c.energy;
  setText(e.status, "");
  try {
    const res = await fetch(rel("api/energy?serial=" + encodeURIComponent(c.serial) + "&format=csv"), { headers: headers(false) });
    if (!res.ok) throw new Error("HTTP " + res.status);
    const url = URL.createObjectURL(await res.blob());
    const a = el("a", { href: url, download: "hearth-energy-" + c.serial + ".csv" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (err) {
    setText(e.status, "The CSV file did not download: " + err.message);
  }
}

// The bars are drawn at the card's width: again when it changes (a turned phone, a wider window).
let energyResize = null;
window.addEventListener("resize", () => {
  clearTimeout(energyResize);
  energyResize = setTimeout(() => {
    for (const c of cards.values()) if (c.energy && c.energy.details.open) drawEnergy(c);
  }, 200);
});
