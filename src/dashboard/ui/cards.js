"use strict";
// ---- one card per thermostat: built once, then updated in place (focus stays put) ----
const WHAT = { target: "target temperature", low: "heat-to temperature", high: "cool-to temperature" };

function buildCard(d) {
  const s = d.serial;
  const id = (part) => part + "-" + s;
  const c = { serial: s, data: d, pending: {}, queue: Promise.resolve() };
  c.name = el("h2", { id: id("name") });
  c.presence = el("span", { class: "presence" });
  c.tempValue = el("span", { class: "value" });
  c.temp = el("span", { class: "temp" }, el("span", { class: "sr" }, "Current temperature "), c.tempValue);
  c.action = el("span", { class: "action" });
  c.facts = el("dl", { class: "facts" });
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
  c.setError = el("p", { class: "error", id: id("setpoint-error"), role: "alert" });
  // Buttons, not a drop-down: arrowing through a closed <select> would send every mode on the way.
  c.modes = el("div", { class: "group", role: "group", id: id("mode"), "aria-labelledby": id("mode-label") });
  c.modeLabel = el("span", { class: "what", id: id("mode-label") }, "Mode");
  c.away = el("button", { type: "button", id: id("away"), "aria-pressed": "false",
    onclick: () => queue(c, "set_away", c.away.getAttribute("aria-pressed") !== "true", c.controlError) }, "Away");
  c.controlError = el("p", { class: "error", id: id("control-error"), role: "alert" });
  c.chart = el("figure", { class: "history" });
  c.schedule = el("div", { class: "editor" });
  const details = el("details", {}, el("summary", {}, "Schedule"), c.schedule);
  c.scheduleDetails = details;
  // Opening loads what is stored; an edit in progress is kept while the section is closed.
  details.addEventListener("toggle", () => {
    c.root.classList.toggle("wide", details.open);
    if (details.open && !(c.ed && c.ed.dirty)) loadSchedule(c);
  });
  const settings = el("details", { class: "more" }, el("summary", {}, "Settings"), buildSettings(c));
  // Closed, unsaved typing is let go: the fields show the thermostat's values again.
  settings.addEventListener("toggle", () => {
    if (!settings.open) { c.st.dirtyEco = false; c.st.dirtyName = false; updateSettings(c); }
  });
  c.root = el("article", { class: "card", id: id("card"), "data-serial": s, "aria-labelledby": id("name") },
    el("div", { class: "head" }, c.name, c.presence),
    el("div", { class: "now" }, c.temp, c.action),
    c.facts,
    el("div", { class: "setpoints", role: "group", "aria-label": "Setpoint" }, c.single, c.low, c.high),
    c.setError,
    el("div", { class: "controls" }, el("div", { class: "group" }, c.modeLabel, c.modes), c.away, fanControl(c)),
    c.controlError,
    c.chart,
    details,
    settings);
  cards.set(s, c);
  document.getElementById("cards").append(c.root);
  return c;
}

function updateCard(d) {
  const c = cards.get(d.serial) || buildCard(d);
  c.data = d;
  const name = d.name || d.serial;
  setText(c.name, name);
  setText(c.presence, d.is_available ? "Online" : "Offline · last seen " + ago(d.last_seen));
  c.presence.className = "presence" + (d.is_available ? " online" : "");
  setText(c.tempValue, show(d.current_temperature, d));
  const acts = activity(d);
  setText(c.action, acts.map((a) => a[1]).join(" · "));
  c.action.className = "action " + acts[0][0];
  const facts = [["Mode", MODE_NAMES[d.mode] || d.mode || "–"]];
  if (typeof d.humidity === "number") facts.push(["Humidity", d.humidity + "%"]);
  const eco = d.eco_mode === "manual-eco" || d.eco_mode === "auto-eco";
  facts.push(["Away", d.away ? "Yes" : "No"]);
  if (eco) facts.push(["Eco", d.eco_mode === "auto-eco" ? "Auto" : "On"]);
  if (d.has_fan) facts.push(["Fan", d.fan_timer_active ? "On" : "Auto"]);
  const factsKey = JSON.stringify(facts);
  if (c.facts.dataset.key !== factsKey) {
    c.facts.replaceChildren(...facts.map(([k, v]) => el("div", {}, el("dt", {}, k), el("dd", {}, v))));
    c.facts.dataset.key = factsKey;
  }
  const range = d.mode === "range";
  const off = d.mode === "off";
  c.single.hidden = range || off;
  c.low.hidden = c.high.hidden = !range;
  const values = { target: d.target_temperature, low: d.target_temperature_low, high: d.target_temperature_high };
  for (const w of ["target", "low", "high"]) {
    setText(c[w + "Out"], show(w in c.pending ? c.pending[w] : values[w], d));
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
  setAttr(c.away, "aria-pressed", String(!!d.away));
  setAttr(c.away, "aria-label", "Away for " + name);
  updateFan(c);
  if (c.chart.dataset.drawn) drawChart(c, c.history);
  updateSettings(c);
  labelEditor(c);
}

// ---- controls: every change goes through /command; the card follows the event stream ----
// One card's commands go one after another, so they reach the server in the order clicked.
function queue(c, command, value, errorSlot) {
  const run = c.queue.then(() => send(c, command, value, errorSlot));
  c.queue = run.catch(() => false);
  return run;
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
    errorSlot.textContent = r.body.message || r.body.error || "The command failed (HTTP " + r.status + ")";
    refreshOne(c.serial);
    return false;
  }
  return true;
}

async function nudge(c, which, dir) {
  const d = c.data;
  const current = which in c.pending ? c.pending[which]
    : { target: d.target_temperature, low: d.target_temperature_low, high: d.target_temperature_high }[which];
  if (typeof current !== "number") return;
  const next = stepped(current, d, dir);
  c.pending[which] = next;
  setText(c[which + "Out"], show(next, d));
  // Heat·cool: only the side clicked, so a click on the other side cannot undo this one.
  const value = which === "target" ? next : { [which]: next };
  await queue(c, "set_temperature", value, c.setError);
  if (c.pending[which] === next) delete c.pending[which];
  refreshOne(c.serial);
}

// ---- data ----
async function loadDevices() {
  const r = await getJSON("api/devices");
  if (!r.ok) return;
  const seen = new Set();
  for (const d of r.body.devices || []) { updateCard(d); seen.add(d.serial); }
  for (const [s, c] of cards) if (!seen.has(s)) { c.root.remove(); cards.delete(s); }
  document.getElementById("empty").hidden = cards.size > 0;
  // The first time the page finds no thermostat, adding one is what the person came for.
  if (!setupShown) { setupShown = true; if (!cards.size) document.getElementById("setup").open = true; }
  for (const c of cards.values()) if (!c.chart.dataset.drawn) loadHistory(c).catch(() => {});
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
function refreshOne(serial) {
  clearTimeout(refreshing.get(serial));
  refreshing.set(serial, setTimeout(async () => {
    refreshing.delete(serial);
    const r = await getJSON("status?serial=" + encodeURIComponent(serial)).catch(() => ({ ok: false }));
    if (r.ok) updateCard(r.body);
    else if (r.status === 404) devicesSoon();
  }, 100));
}
