"use strict";
// ---- one card per thermostat: built once, then updated in place (focus stays put) ----
const WHAT = { target: "target temperature", low: "heat-to temperature", high: "cool-to temperature" };
// Presses on − and + wait this long for the next one, then go as one setpoint command.
const PRESS_PAUSE_MS = 700;
// After an accepted setpoint the card shows it until the thermostat's record agrees, or this long.
const SETTLE_MS = 5000;

// A leaf, drawn: the Nest app's sign for eco.
function leaf() {
  const ns = "http://www.w3.org/2000/svg";
  const icon = document.createElementNS(ns, "svg");
  icon.setAttribute("viewBox", "0 0 16 16");
  icon.setAttribute("class", "leaf");
  icon.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", "M14 2C7 2 2.5 5 2.5 10.5c0 1.2.3 2.3.8 3.2L2 15l1 1 1.3-1.3c.9.5 2 .8 3.2.8C13 15.5 14 9 14 2zM5 12.5c1.5-3 4-5.5 7-7-2.5 2-4.8 4.5-6.3 7.6z");
  icon.append(path);
  return icon;
}

function buildCard(d) {
  const s = d.serial;
  const id = (part) => part + "-" + s;
  const c = { serial: s, data: d, pending: {}, timers: {}, queue: Promise.resolve() };
  c.name = el("h2", { id: id("name") });
  c.presence = el("span", { class: "presence" });
  c.tempValue = el("span", { class: "value" });
  c.temp = el("span", { class: "temp" }, el("span", { class: "sr" }, "Current temperature "), c.tempValue);
  // What the system is doing and why, said when it changes.
  c.action = el("span", { class: "action", id: id("action"), role: "status" });
  c.humidity = el("span", { class: "humidity", id: id("humidity") });
  c.outside = el("span", { class: "humidity", id: id("outside") });
  c.waitNote = el("p", { class: "waiting", id: id("waiting"), role: "status" });
  // Eco (away): the leaf, the range it holds, and the way back home in place of the setpoints.
  c.ecoText = el("span", { id: id("eco-text") });
  c.home = el("button", { type: "button", class: "primary", id: id("home"), onclick: () => setAway(c, false) }, "I'm home");
  c.eco = el("div", { class: "eco", id: id("eco") }, el("span", { class: "eco-badge" }, leaf(), "Eco"), c.ecoText, c.home);
  c.plan = el("p", { class: "plan", id: id("plan") });
  const setpoint = (which, label) => {
    const out = el("output", { id: id(which), "aria-labelledby": id(which + "-label") + " " + id(which) });
    const lower = el("button", { class: "step", type: "button", onclick: () => nudge(c, which, -1) }, "−");
    const raise = el("button", { class: "step", type: "button", onclick: () => nudge(c, which, 1) }, "+");
    c[which + "Out"] = out; c[which + "Lower"] = lower; c[which + "Raise"] = raise;
    return el("div", { class: "setpoint", "data-setpoint": which },
      el("span", { class: "what", id: id(which + "-label") }, label), lower, out, raise);
  };
  c.single = setpoint("target", "Target");
  c.low = setpoint("low", "Heat to");
  c.high = setpoint("high", "Cool to");
  c.setpoints = el("div", { class: "setpoints", role: "group", "aria-label": "Setpoint" }, c.single, c.low, c.high);
  c.setError = el("p", { class: "error", id: id("setpoint-error"), role: "alert" });
  // Buttons, not a drop-down: arrowing through a closed <select> would send every mode on the way.
  c.modes = el("div", { class: "group", role: "group", id: id("mode"), "aria-labelledby": id("mode-label") });
  c.modeLabel = el("span", { class: "what", id: id("mode-label") }, "Mode");
  // Home or away: who is in, not how the equipment runs, so a control of its own.
  c.atHome = el("button", { type: "button", id: id("at-home"), "aria-pressed": "false", onclick: () => setAway(c, false) }, "Home");
  c.away = el("button", { type: "button", id: id("away"), "aria-pressed": "false", onclick: () => setAway(c, true) }, "Away");
  c.presenceGroup = el("div", { class: "group segmented", role: "group", id: id("presence") }, c.atHome, c.away);
  c.controls = el("div", { class: "controls" }, el("div", { class: "group" }, c.modeLabel, c.modes), c.presenceGroup, fanControl(c));
  c.controlError = el("p", { class: "error", id: id("control-error"), role: "alert" });
  c.chart = el("figure", { class: "history" });
  // The schedule opens in a dialog of its own (schedule.js): the card does not change size.
  const details = scheduleSection(c);
  const settings = el("details", { class: "more" }, el("summary", {}, "Settings"), buildSettings(c));
  // Closed, unsaved typing is let go: the fields show the thermostat's values again.
  settings.addEventListener("toggle", () => {
    if (!settings.open) { c.st.dirtyEco = false; c.st.dirtyName = false; updateSettings(c); }
  });
  c.live = [c.setpoints, c.setError, c.controls, c.controlError, c.chart, details, buildEnergy(c), settings];
  c.root = el("article", { class: "card", id: id("card"), "data-serial": s, "aria-labelledby": id("name") },
    el("div", { class: "head" }, c.name, c.presence),
    el("div", { class: "now" }, c.temp, el("div", { class: "doing" }, c.action, c.humidity, c.outside)),
    c.waitNote,
    c.eco,
    c.plan,
    ...c.live);
  cards.set(s, c);
  document.getElementById("cards").append(c.root);
  loadPlan(c).catch(() => {});
  return c;
}

// Degrees without the scale's letter, as a dial shows them: "21.0°", "70°".
function deg(v, d) {
  if (typeof v !== "number") return "–";
  return isF(d) ? Math.round(v * 9 / 5 + 32) + "°" : v.toFixed(1) + "°";
}
const isNum = (v) => typeof v === "number" && isFinite(v);
// Eco: away (manual eco on its home) or the thermostat's own eco.
const inEco = (c, d) => ("away" in c.pending ? c.pending.away : !!d.away) || d.eco_mode === "manual-eco" || d.eco_mode === "auto-eco";
// `reported` is false until the thermostat has sent its state once; a server without the field
// has always had it.
const hasReported = (d) => d.reported !== false;

// What the system is doing, and why: the setpoint it heats or cools to.
function doing(c, d, eco) {
  const h = d.hvac || {};
  const eT = d.eco_temperatures || {};
  const heatTo = eco ? eT.low : d.mode === "range" ? d.target_temperature_low : d.target_temperature;
  const coolTo = eco ? eT.high : d.mode === "range" ? d.target_temperature_high : d.target_temperature;
  if (HEAT_FLAGS.some((f) => h[f])) return ["heating", isNum(heatTo) ? "Heating to " + deg(heatTo, d) : "Heating"];
  if (COOL_FLAGS.some((f) => h[f])) return ["cooling", isNum(coolTo) ? "Cooling to " + deg(coolTo, d) : "Cooling"];
  if (h.fan || d.fan_timer_active) return ["fan", "Fan"];
  if (h.dehumidifier) return ["", "Dehumidifying"];
  if (h.humidifier) return ["", "Humidifying"];
  if (d.mode === "off") return ["off", "Off"];
  return ["idle", "Idle"];
}

// The range eco holds, for the mode the thermostat is in.
function ecoRange(d) {
  const e = d.eco_temperatures || {};
  const u = unit(d);
  if (d.mode === "heat" || d.mode === "emergency") return isNum(e.low) ? `Keeps it at ${deg(e.low, d).slice(0, -1)}${u} or warmer` : "";
  if (d.mode === "cool") return isNum(e.high) ? `Keeps it at ${deg(e.high, d).slice(0, -1)}${u} or cooler` : "";
  if (d.mode === "range" && isNum(e.low) && isNum(e.high)) return `Keeps it between ${deg(e.low, d).slice(0, -1)} and ${deg(e.high, d).slice(0, -1)}${u}`;
  return d.mode === "off" ? "The system is off" : "";
}

function updateCard(d) {
  const c = cards.get(d.serial) || buildCard(d);
  // A record without the field (an answer from elsewhere) does not undo "not yet" by itself.
  if (!("reported" in d) && c.data.reported === false && !isNum(d.current_temperature)) d.reported = false;
  c.data = d;
  const name = d.name || d.serial;
  setText(c.name, name);
  setText(c.presence, d.is_available ? "Online" : "Offline · last seen " + ago(d.last_seen));
  c.presence.className = "presence" + (d.is_available ? " online" : "");

  // A thermostat that has not sent its state yet: say so, and offer no controls that do nothing.
  const waiting = !hasReported(d);
  c.root.classList.toggle("not-reported", waiting);
  setText(c.waitNote, waiting ? "Waiting for the thermostat… It has connected; its temperature and settings appear as soon as it sends them." : "");
  c.waitNote.hidden = !waiting;
  for (const part of c.live) part.hidden = waiting;
  setText(c.tempValue, waiting ? "…" : show(d.current_temperature, d));

  const eco = !waiting && inEco(c, d);
  const [cls, text] = waiting ? ["idle", "Waiting"] : doing(c, d, eco);
  setText(c.action, text);
  c.action.className = "action " + cls;
  setText(c.humidity, !waiting && isNum(d.humidity) ? d.humidity + "% humidity" : "");
  c.humidity.hidden = !c.humidity.textContent;
  // From the last weather answer for the thermostat's place (null without one).
  setText(c.outside, !waiting && isNum(d.outdoor_temperature) ? "Outside " + deg(d.outdoor_temperature, d) : "");
  c.outside.hidden = !c.outside.textContent;

  c.eco.hidden = !eco;
  setText(c.ecoText, ecoRange(d));
  setAttr(c.home, "aria-label", `I'm home: end eco on ${name}`);

  const range = d.mode === "range";
  const off = d.mode === "off";
  c.setpoints.hidden = waiting || eco || off;
  c.single.hidden = range || off;
  c.low.hidden = c.high.hidden = !range;
  const values = { target: d.target_temperature, low: d.target_temperature_low, high: d.target_temperature_high };
  for (const w of ["target", "low", "high"]) {
    const p = c.pending[w];
    // What was pressed stays shown until the thermostat's record agrees (or a while has passed).
    if (p && p.settled && (Math.abs(values[w] - p.value) < 0.01 || Date.now() - p.settled > SETTLE_MS)) delete c.pending[w];
    setText(c[w + "Out"], show(w in c.pending ? c.pending[w].value : values[w], d));
    setAttr(c[w + "Lower"], "aria-label", "Lower " + WHAT[w] + " of " + name);
    setAttr(c[w + "Raise"], "aria-label", "Raise " + WHAT[w] + " of " + name);
  }
  const modes = ["off"];
  if (d.can_heat) modes.push("heat");
  if (d.can_cool) modes.push("cool");
  if (d.can_heat && d.can_cool) modes.push("range");
  if (d.has_emer_heat) modes.push("emergency");
  if (c.modes.dataset.modes !== modes.join()) {
    c.modes.replaceChildren(...modes.map((m) => el("button", { type: "button", "data-mode": m, "aria-pressed": "false",
      onclick: () => queue(c, "set_mode", m, c.controlError) }, MODE_NAMES[m])));
    c.modes.dataset.modes = modes.join();
  }
  for (const b of c.modes.children) setAttr(b, "aria-pressed", String(b.dataset.mode === d.mode));
  setAttr(c.modes, "aria-label", "Mode of " + name);
  const away = "away" in c.pending ? c.pending.away : !!d.away;
  setAttr(c.away, "aria-pressed", String(away));
  setAttr(c.atHome, "aria-pressed", String(!away));
  setAttr(c.away, "aria-label", "Away for " + name);
  setAttr(c.atHome, "aria-label", "Home for " + name);
  setAttr(c.presenceGroup, "aria-label", "Home or away: " + name);
  updateFan(c);
  showPlan(c, d, eco || waiting);
  // Each chart's history once; the stream and the timer keep it current from then on.
  if (!waiting && !c.historyAsked) {
    c.historyAsked = true;
    loadHistory(c).catch(() => { c.historyAsked = false; });
  }
  if (c.chart.dataset.drawn) drawChart(c, c.history);
  updateSettings(c);
  labelEditor(c);
  labelEnergy(c);
}

// ---- the schedule at a glance: its next change, or the manual setting holding until then ----
async function loadPlan(c) {
  const r = await getJSON("api/schedule?serial=" + encodeURIComponent(c.serial));
  if (!r.ok) return;
  c.stored = r.body.schedule || null;
  if (cards.get(c.serial) === c) showPlan(c, c.data, c.eco.hidden === false || !hasReported(c.data));
}

// A day's entries in time order, from the thermostat's object form ("0", "1", ...) or a list.
function dayEntries(sched, day) {
  const raw = (sched.days || {})[String(day)];
  const list = Array.isArray(raw) ? raw : Object.values(raw || {});
  return list.filter((e) => e && isNum(e.time)).sort((a, b) => a.time - b.time);
}

// Where the schedule stands at a moment (day 0 is Monday, as the thermostat counts; the page's
// clock stands in for the thermostat's, which shares its time zone in a home), and what comes
// next: the entry in force and the following ones, a week ahead.
function planAt(sched, now) {
  const day = (now.getDay() + 6) % 7;
  const secs = now.getHours() * 3600 + now.getMinutes() * 60 + now.getSeconds();
  let current = null, previous = null, since = 0;
  for (let back = 0; back < 8 && !previous; back++) {
    const entries = dayEntries(sched, (day - back + 7) % 7).filter((e) => back > 0 || e.time <= secs);
    for (let i = entries.length - 1; i >= 0 && !previous; i--) {
      if (!current) { current = entries[i]; since = back * 86400 + secs - current.time; } else previous = entries[i];
    }
  }
  const upcoming = [];
  for (let ahead = 0; ahead <= 7; ahead++) {
    for (const e of dayEntries(sched, (day + ahead) % 7)) {
      if (ahead === 0 && e.time <= secs) continue;
      if (ahead === 7 && e.time > secs) continue;
      upcoming.push({ ahead, entry: e });
    }
  }
  return { current, previous, since, upcoming };
}

// How long after a schedule entry's time the thermostat may still show the setpoint before it.
const TRANSITION_SLACK_S = 120;
const entryValue = (e, type) => (type === "RANGE" ? [e["temp-min"], e["temp-max"]] : [e.temp]);
const sameValue = (a, b, tolerance) => a.length === b.length && a.every((v, i) => isNum(v) && isNum(b[i]) && Math.abs(v - b[i]) <= tolerance);
function valueText(v, d) { return v.length === 2 ? deg(v[0], d).slice(0, -1) + "–" + deg(v[1], d) : deg(v[0], d); }
function whenText(x, now) {
  const t = hhmm(x.entry.time);
  return x.ahead === 0 ? t : x.ahead === 1 ? "tomorrow " + t : DAYS[(now.getDay() + 6 + x.ahead) % 7].slice(0, 3) + " " + t;
}

function planText(c, d, now) {
  const sched = c.stored;
  const type = { heat: "HEAT", cool: "COOL", range: "RANGE" }[d.mode];
  if (!sched || !type || (sched.schedule_mode || "").toUpperCase() !== type) return "";
  const { current, previous, since, upcoming } = planAt(sched, now);
  if (!current) return "";
  const scheduled = entryValue(current, type);
  // A manual change holds until the schedule's next entry; the thermostat's record shows it as
  // a setpoint other than the one in force (a quarter degree of slack, for °F rounding).
  const setpoints = type === "RANGE" ? [d.target_temperature_low, d.target_temperature_high] : [d.target_temperature];
  if (!setpoints.every(isNum)) return "";
  const tolerance = isF(d) ? 0.3 : 0.25;
  const transitions = upcoming.filter((x) => x.entry.entry_type !== "continuation");
  // Just after an entry's time the thermostat may not have moved yet: not a hold.
  if (since < TRANSITION_SLACK_S && previous && sameValue(setpoints, entryValue(previous, type), tolerance)) return "";
  if (!sameValue(setpoints, scheduled, tolerance)) {
    return transitions.length ? `Holding ${valueText(setpoints, d)} until ${whenText(transitions[0], now)}` : `Holding ${valueText(setpoints, d)}`;
  }
  const next = upcoming.find((x) => !sameValue(entryValue(x.entry, type), scheduled, 0.01));
  return next ? `Next ${whenText(next, now)} → ${valueText(entryValue(next.entry, type), d)}` : "";
}

function showPlan(c, d, quiet) {
  const text = quiet ? "" : planText(c, d, new Date());
  setText(c.plan, text);
  c.plan.hidden = !text;
  c.plan.className = "plan" + (text.startsWith("Holding") ? " holding" : "");
}
// The next change comes due while nothing else happens: look again each minute.
setInterval(() => { for (const c of cards.values()) showPlan(c, c.data, !c.eco.hidden || !hasReported(c.data)); }, 60000);

// ---- controls: every change goes through /command; the card follows the event stream ----
// One card's commands go one after another, so they reach the server in the order clicked.
function queue(c, command, value, errorSlot) {
  const run = c.queue.then(() => send(c, command, value, errorSlot));
  c.queue = run.catch(() => false);
  return run;
}

// Words for a refusal, next to the control it answers.
function refusalText(r, command) {
  const said = r.body.message || r.body.error;
  if (!said) return "The command failed (HTTP " + r.status + ")";
  return command === "set_temperature" ? "Not set: " + said : said;
}

async function send(c, command, value, errorSlot) {
  errorSlot.textContent = "";
  let r;
  try {
    r = await postJSON("command", { serial: c.serial, command, value });
  } catch (e) {
    r = { ok: false, body: { message: "hearth did not answer (" + e.message + ")" } };
  }
  if (!r.ok || r.body.success === false) {
    errorSlot.textContent = refusalText(r, command);
    refreshOne(c.serial);
    return false;
  }
  return true;
}

async function setAway(c, away) {
  c.pending.away = away;
  updateCard(c.data);
  await queue(c, "set_away", away, c.controlError);
  delete c.pending.away;
  refreshOne(c.serial);
}

// A press counts from the last value pressed, not the last confirmed one; presses in a row go
// as one command once they pause, and the value shown stays what was pressed meanwhile.
function nudge(c, which, dir) {
  const d = c.data;
  const p = c.pending[which];
  const current = p ? p.value : { target: d.target_temperature, low: d.target_temperature_low, high: d.target_temperature_high }[which];
  if (!isNum(current)) return;
  let next = stepped(current, d, dir);
  const bounds = d.temperature_bounds;
  c.setError.textContent = "";
  if (bounds && isNum(bounds.low) && isNum(bounds.high) && (next < bounds.low - 0.01 || next > bounds.high + 0.01)) {
    next = Math.min(bounds.high, Math.max(bounds.low, next));
    c.setError.textContent = dir > 0 ? `${show(bounds.high, d)} is as warm as this thermostat allows.` : `${show(bounds.low, d)} is as cool as this thermostat allows.`;
    if (Math.abs(next - current) < 0.01) return;
  }
  c.pending[which] = { value: next };
  setText(c[which + "Out"], show(next, d));
  clearTimeout(c.timers[which]);
  c.timers[which] = setTimeout(() => sendSetpoint(c, which), PRESS_PAUSE_MS);
}

async function sendSetpoint(c, which) {
  const p = c.pending[which];
  if (!p) return;
  // Heat·cool: only the side pressed, so a press on the other side cannot undo this one.
  const value = which === "target" ? p.value : { [which]: p.value };
  const ok = await queue(c, "set_temperature", value, c.setError);
  if (c.pending[which] === p) {
    // Accepted: shown until the record agrees. Refused: the thermostat's value again.
    if (ok) p.settled = Date.now();
    else delete c.pending[which];
  }
  refreshOne(c.serial);
}

// ---- data ----
// Concurrent calls share one request (the stream connecting and the page starting ask at once).
let devicesLoading = null;
function loadDevices() {
  if (!devicesLoading) devicesLoading = fetchDevices().finally(() => { devicesLoading = null; });
  return devicesLoading;
}
async function fetchDevices() {
  const r = await getJSON("api/devices");
  if (!r.ok) return;
  const seen = new Set();
  for (const d of r.body.devices || []) { updateCard(d); seen.add(d.serial); }
  for (const [s, c] of cards) if (!seen.has(s)) dropCard(c);
  document.getElementById("empty").hidden = cards.size > 0;
  // The first time the page finds no thermostat, adding one is what the person came for.
  if (!setupShown) { setupShown = true; if (!cards.size) document.getElementById("setup").open = true; }
  loadWaiting().catch(() => {});
}
let setupShown = false;

// At most one reload of the list a second: in pairing mode an unclaimed thermostat's events
// (it is not listed) would otherwise reload it on every upload.
let devicesTimer = null;
function devicesSoon() {
  if (devicesTimer) return;
  devicesTimer = setTimeout(() => { devicesTimer = null; loadDevices().catch(() => {}); }, 1000);
}

const refreshing = new Map();
// A card leaves the page with its presses still waiting and its refresh: none of them may send
// or redraw for a thermostat that is no longer listed.
function dropCard(c) {
  for (const t of Object.values(c.timers)) clearTimeout(t);
  c.timers = {};
  c.pending = {};
  clearTimeout(refreshing.get(c.serial));
  refreshing.delete(c.serial);
  c.root.remove();
  cards.delete(c.serial);
  document.getElementById("empty").hidden = cards.size > 0;
}

function refreshOne(serial) {
  clearTimeout(refreshing.get(serial));
  refreshing.set(serial, setTimeout(async () => {
    refreshing.delete(serial);
    const r = await getJSON("status?serial=" + encodeURIComponent(serial)).catch(() => ({ ok: false }));
    // Only cards on the page: a thermostat just removed must not come back from a late answer.
    if (r.ok && cards.has(serial)) updateCard(r.body);
    else if (r.status === 404) devicesSoon();
  }, 100));
}
