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
  // Eco (away): the leaf and the range it holds, in the setpoints' place (the way back is the
  // card's one Home/Away control).
  c.ecoText = el("span", { id: id("eco-text") });
  c.eco = el("div", { class: "eco", id: id("eco") }, el("span", { class: "eco-badge" }, leaf(), "Eco"), c.ecoText);
  c.planText = el("span", { id: id("plan") });
  c.resume = el("button", { type: "button", class: "resume", id: id("resume"),
    onclick: () => queue(c, "resume_schedule", null, c.controlError) }, "Resume");
  c.plan = el("div", { class: "plan" }, c.planText, c.resume);
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
  // The setpoints or eco, one place of one height, so away and home move nothing.
  c.slot = el("div", { class: "slot" }, c.setpoints, c.eco);
  c.setError = el("p", { class: "error", id: id("setpoint-error"), role: "alert" });
  // Whether the thermostat took the latest change; its line is always there, so nothing moves.
  c.taken = el("p", { class: "taken", id: id("taken"), role: "status" });
  // Buttons, not a drop-down: arrowing through a closed <select> would send every mode on the way.
  c.modes = el("div", { class: "group", role: "group", id: id("mode"), "aria-labelledby": id("mode-label") });
  c.modeLabel = el("span", { class: "what", id: id("mode-label") }, "Mode");
  // Home or away: who is in, not how the equipment runs, so a control of its own.
  c.atHome = el("button", { type: "button", id: id("at-home"), "aria-pressed": "false", onclick: () => setAway(c, false) }, "Home");
  c.away = el("button", { type: "button", id: id("away"), "aria-pressed": "false", onclick: () => setAway(c, true) }, "Away");
  c.presenceGroup = el("div", { class: "group segmented", role: "group", id: id("presence") }, c.atHome, c.away);
  // Home/Away first, so it is in the same place on every card whatever its modes.
  c.controls = el("div", { class: "controls" }, c.presenceGroup, el("div", { class: "group" }, c.modeLabel, c.modes), fanControl(c));
  c.controlError = el("p", { class: "error", id: id("control-error"), role: "alert" });
  c.chart = el("figure", { class: "history" });
  // The schedule opens in a dialog of its own (schedule.js): the card does not change size.
  const details = scheduleSection(c);
  const settings = el("details", { class: "more" }, el("summary", {}, "Settings"), buildSettings(c));
  // Closed, unsaved typing is let go: the fields show the thermostat's values again.
  settings.addEventListener("toggle", () => {
    if (!settings.open) { c.st.dirtyEco = false; c.st.dirtyName = false; updateSettings(c); }
  });
  c.live = [c.slot, c.taken, c.setError, c.controls, c.controlError, c.chart, details, buildEnergy(c), settings];
  c.root = el("article", { class: "card", id: id("card"), "data-serial": s, "aria-labelledby": id("name") },
    el("div", { class: "head" }, c.name, c.presence),
    el("div", { class: "now" }, c.temp, el("div", { class: "doing" }, c.action, c.humidity, c.outside)),
    c.waitNote,
    c.plan,
    ...c.live);
  cards.set(s, c);
  document.getElementById("cards").append(c.root);
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
  if (d.mode === "heat" || d.mode === "emergency") return isNum(e.low) ? `keeps it at ${deg(e.low, d).slice(0, -1)}${u} or warmer` : "";
  if (d.mode === "cool") return isNum(e.high) ? `keeps it at ${deg(e.high, d).slice(0, -1)}${u} or cooler` : "";
  if (d.mode === "range" && isNum(e.low) && isNum(e.high)) return `keeps it at ${deg(e.low, d).slice(0, -1)}–${deg(e.high, d).slice(0, -1)}${u}`;
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

  const range = d.mode === "range";
  const off = d.mode === "off";
  c.setpoints.hidden = waiting || eco || off;
  c.slot.classList.toggle("off", off && !eco);
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
  updateTaken(c, d);
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

// ---- whether the thermostat took the latest change (docs/control-api.md) ----
const CHANGE_WORDS = { setpoint: "Temperature", mode: "Mode", fan: "Fan", away: "Home/Away",
  eco: "Eco temperatures", schedule: "Schedule", settings: "Settings", lock: "Lock", name: "Name", dialog: "Dialog" };
// A change taken or sent this long ago is no longer news; one still waiting always is.
const CHANGE_NEWS_MS = 3600000;
// Thermostats whose change is late: the server's not_applied alert (alerts.js keeps it).
const lateSerials = new Set();

// Quiet while the thermostat may still take it or once it has; loud once the server says it
// is late (its not_applied alert).
function updateTaken(c, d) {
  const ch = d.last_change;
  let text = "", late = false;
  if (ch && ch.sent_at) {
    const what = CHANGE_WORDS[ch.kind] || "Change";
    const sent = clockTime(ch.sent_at);
    const recent = (iso) => Date.now() - Date.parse(iso) < CHANGE_NEWS_MS;
    if (ch.state === "waiting" && lateSerials.has(c.serial)) {
      late = true;
      text = `${what} sent ${sent} has not been taken: the thermostat reports but is not following changes`;
    } else if (ch.state === "waiting") {
      text = `${what} sent ${sent} · waiting…`;
    } else if (ch.state === "taken" && recent(ch.taken_at)) {
      text = `On the thermostat · ${clockTime(ch.taken_at)}`;
    } else if (ch.state === "sent" && recent(ch.sent_at)) {
      text = `${what} sent · ${sent}`;
    }
  }
  setText(c.taken, text);
  c.taken.classList.toggle("late", late);
  c.taken.dataset.state = ch ? ch.state : "";
}

// ---- the schedule at a glance: its next change, or the manual setting holding until then ----
// The server works both out from the thermostat's reading in its structure's time zone
// (`hold` and `next_step` of /status); the page only words them.
function valueText(v, d) { return v.length === 2 ? deg(v[0], d).slice(0, -1) + "–" + deg(v[1], d) : deg(v[0], d); }
const whenText = (iso, now) => whenWords(new Date(iso), now);

function planText(d, now) {
  if (d.hold) {
    const held = "Holding " + valueText(d.hold.setpoints, d);
    if (!d.hold.until) return held;
    const then = d.hold.then ? ", then " + valueText(d.hold.then, d) : "";
    return `${held} until ${whenText(d.hold.until, now)}${then}`;
  }
  if (d.next_step) return `Next ${whenText(d.next_step.at, now)} → ${valueText(d.next_step.setpoints, d)}`;
  return "";
}

function showPlan(c, d, quiet) {
  const eco = !c.eco.hidden;
  const text = !hasReported(d) ? "" : eco ? "The schedule resumes when eco ends" : planText(d, new Date());
  const holding = !quiet && !!d.hold;
  setText(c.planText, text);
  // The line keeps its place, empty or not, so a tap that starts or ends a hold moves nothing.
  c.plan.hidden = !hasReported(d);
  c.plan.classList.toggle("holding", holding);
  // Kept in its place while hidden, so the line does not grow or shrink under a tap.
  c.resume.style.visibility = holding ? "visible" : "hidden";
  c.resume.disabled = !holding;
  setAttr(c.resume, "aria-label", "Resume schedule on " + nameOf(c) + ": end the hold");
  // The course changes at its next step: read the record again then (the server has made it
  // again by that time).
  clearTimeout(c.planTimer);
  const at = d.hold ? d.hold.until : d.next_step ? d.next_step.at : null;
  const due = at ? Date.parse(at) - Date.now() + 2000 : NaN;
  if (due > 0 && due < 86400000) c.planTimer = setTimeout(() => refreshOne(c.serial), due);
}
// "tomorrow" becomes "today" at midnight without a change of the record: word it again hourly.
setInterval(() => { for (const c of cards.values()) showPlan(c, c.data, !c.eco.hidden || !hasReported(c.data)); }, 3600000);

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
