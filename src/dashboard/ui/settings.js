"use strict";
// ---- a thermostat's settings: name, eco temperatures, temperature lock, removal; and the ----
// ---- card's fan control (the one place the fan is run from) ----
const FAN_RUNS = [[900, "15 min"], [1800, "30 min"], [3600, "1 hour"], [7200, "2 hours"], [14400, "4 hours"], [28800, "8 hours"], [43200, "12 hours"]];

// The card's quick fan control, on thermostats with a fan: "Fan on" runs it for the time
// chosen beside it (the thermostat's own fan timer duration until someone chooses), and
// while it runs says until when; pressed again, the fan follows heating and cooling again.
function fanControl(c) {
  const id = (part) => part + "-" + c.serial;
  c.fan = el("button", { type: "button", id: id("fan"), "aria-pressed": "false", onclick: async () => {
    const running = c.fan.getAttribute("aria-pressed") === "true";
    c.fanNote.textContent = "";
    await queue(c, "set_fan", running ? "auto" : +c.fanFor.value, c.controlError);
  } }, "Fan on");
  c.fanFor = el("select", { id: id("fan-for"), onchange: () => { c.fanChosen = true; } },
    ...FAN_RUNS.map(([secs, text]) => el("option", { value: String(secs) }, "for " + text)));
  c.fanNote = el("span", { class: "note", id: id("fan-note"), role: "status" });
  // How long, or until when: one place, so starting the fan moves nothing.
  c.fanControl = el("div", { class: "group" }, c.fan, el("span", { class: "fan-when" }, c.fanFor, c.fanNote));
  return c.fanControl;
}

function updateFan(c) {
  const d = c.data, name = nameOf(c);
  c.fanControl.hidden = !d.has_fan;
  const running = !!d.fan_timer_active;
  setAttr(c.fan, "aria-pressed", String(running));
  setAttr(c.fan, "aria-label", "Fan on for " + name);
  setAttr(c.fanFor, "aria-label", "How long the fan of " + name + " runs");
  if (!c.fanChosen) {
    const own = FAN_RUNS.find(([secs]) => secs === d.fan_timer_duration);
    c.fanFor.value = String(own ? own[0] : 3600);
  }
  c.fanFor.style.visibility = running ? "hidden" : "visible";
  c.fanFor.disabled = running;
  setText(c.fanNote, running && typeof d.fan_timer_timeout === "number"
    ? "until " + clockTime(new Date(d.fan_timer_timeout * 1000))
    : "");
}

function buildSettings(c) {
  const s = c.serial, id = (part) => part + "-" + s;
  const st = {};
  c.st = st;
  // Each part answers right below itself: what went wrong, or what was done.
  const slot = (part) => ({ error: el("p", { class: "error", id: id(part + "-error"), role: "alert" }),
    note: el("p", { class: "note", id: id(part + "-note"), role: "status" }) });
  const start = (at) => { at.error.textContent = ""; at.note.textContent = ""; };
  // `moveFocus`: the button pressed is about to be hidden (Lock, Unlock, Stop), so the focus
  // goes to the answer instead of falling back to the top of the page.
  const done = (at, text, moveFocus) => {
    at.note.textContent = text;
    if (moveFocus) { at.note.tabIndex = -1; at.note.focus(); }
    refreshOne(s);
  };
  const form = (title, at, ...children) => el("form", { novalidate: "" }, el("h3", {}, title), ...children, at.error, at.note);
  const named = slot("name"), eco = slot("eco"), locked = slot("lock"), removal = slot("remove");
  st.removal = removal;
  const number = (part, label) => {
    const input = el("input", { type: "number", id: id(part), inputmode: "decimal" });
    return [input, el("label", { for: input.id }, label)];
  };
  // A label and its field, kept together on one line when the row wraps.
  const pair = (label, input, ...after) => el("span", { class: "pair" }, label, input, ...after);

  // Name
  st.name = el("input", { type: "text", id: id("rename"), maxlength: "60", autocomplete: "off" });
  st.rename = el("button", { type: "submit" }, "Rename");
  const nameForm = form("Name", named, el("div", { class: "controls" }, el("label", { for: st.name.id }, "Name"), st.name, st.rename),
    el("p", { class: "note" }, "Shown here, in Home Assistant and to the hosted API. Leave it empty to use the thermostat's own."));
  st.name.addEventListener("input", () => { st.dirtyName = true; });
  nameForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    start(named);
    const asked = st.name.value.trim();
    if (await queue(c, "set_name", asked, named.error)) { st.dirtyName = false; done(named, asked ? `Renamed to ${asked}.` : "Name cleared."); }
  });

  // Eco temperatures
  const [ecoLow, ecoLowLabel] = number("eco-low", "Heat to at least");
  const [ecoHigh, ecoHighLabel] = number("eco-high", "Cool to at most");
  st.ecoLow = ecoLow; st.ecoHigh = ecoHigh;
  st.ecoSave = el("button", { type: "submit" }, "Save eco temperatures");
  const ecoForm = form("Eco temperatures", eco,
    el("p", { class: "note" }, "While eco (away) is on, the thermostat keeps the house between these."),
    el("div", { class: "controls" }, pair(ecoLowLabel, ecoLow), pair(ecoHighLabel, ecoHigh, st.ecoUnit = el("span", {})), st.ecoSave));
  ecoForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    start(eco);
    const d = c.data, low = parseFloat(ecoLow.value), high = parseFloat(ecoHigh.value);
    if (!Number.isFinite(low) || !Number.isFinite(high)) { eco.error.textContent = "Enter both eco temperatures."; return; }
    const value = { low: half(fromScale(low, d)), high: half(fromScale(high, d)) };
    if (value.low >= value.high) { eco.error.textContent = "The heat-to temperature must be below the cool-to temperature."; return; }
    const outside = outsideBounds(value, d);
    if (outside) { eco.error.textContent = outside; return; }
    if (await queue(c, "set_eco_temperatures", value, eco.error)) { st.dirtyEco = false; done(eco, `Eco temperatures saved: ${show(value.low, d)} to ${show(value.high, d)}.`); }
  });
  for (const input of [ecoLow, ecoHigh]) input.addEventListener("input", () => { st.dirtyEco = true; });

  // Temperature lock
  st.lockState = el("p", {});
  st.pin = el("input", { type: "password", id: id("lock-pin"), class: "pin", inputmode: "numeric", maxlength: "4", autocomplete: "off" });
  const [lockLow, lockLowLabel] = number("lock-low", "Lowest");
  const [lockHigh, lockHighLabel] = number("lock-high", "Highest");
  st.lockLow = lockLow; st.lockHigh = lockHigh;
  st.lockOn = el("button", { type: "submit" }, "Lock");
  st.lockOff = el("button", { type: "button", onclick: async () => {
    start(locked);
    if (await queue(c, "set_temperature_lock", { enabled: false }, locked.error)) done(locked, "Temperature lock off.", true);
  } }, "Unlock");
  st.lockFields = el("div", { class: "controls" }, pair(el("label", { for: st.pin.id }, "4-digit PIN"), st.pin),
    pair(lockLowLabel, lockLow), pair(lockHighLabel, lockHigh, st.lockUnit = el("span", {})), st.lockOn);
  const lockForm = form("Temperature lock", locked, st.lockState, st.lockFields, el("div", { class: "controls" }, st.lockOff));
  lockForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    start(locked);
    const d = c.data, pin = st.pin.value.trim();
    const low = parseFloat(lockLow.value), high = parseFloat(lockHigh.value);
    if (!/^\d{4}$/.test(pin)) { locked.error.textContent = "The PIN is 4 digits."; st.pin.focus(); return; }
    if (!Number.isFinite(low) || !Number.isFinite(high)) { locked.error.textContent = "Enter the lowest and highest temperatures."; return; }
    const value = { enabled: true, pin_hash: sha1Base64(pin + s), low: half(fromScale(low, d)), high: half(fromScale(high, d)) };
    if (value.low >= value.high) { locked.error.textContent = "The lowest temperature must be below the highest."; return; }
    const outside = outsideBounds(value, d);
    if (outside) { locked.error.textContent = outside; return; }
    // Only the PIN's hash leaves the page (what the thermostat compares); the PIN is forgotten.
    st.pin.value = "";
    if (await queue(c, "set_temperature_lock", value, locked.error)) done(locked, `Locked to ${show(value.low, d)}–${show(value.high, d)}.`, true);
  });

  // Remove
  st.remove = el("button", { type: "button", class: "danger", "aria-expanded": "false" }, "Remove…");
  st.confirmText = el("p", {});
  st.confirmYes = el("button", { type: "button", class: "danger", onclick: () => removeThermostat(c) }, "Remove");
  st.confirmNo = el("button", { type: "button", onclick: () => { st.confirm.hidden = true; st.remove.setAttribute("aria-expanded", "false"); st.remove.focus(); } }, "Keep it");
  st.confirm = el("div", { class: "confirm", hidden: "", role: "group", "aria-label": "Confirm removal" }, st.confirmText,
    el("div", { class: "controls" }, st.confirmYes, st.confirmNo));
  st.remove.addEventListener("click", () => {
    st.confirm.hidden = false;
    st.remove.setAttribute("aria-expanded", "true");
    st.confirmNo.focus();
  });
  const removeBlock = el("div", {}, el("h3", {}, "Remove"), el("div", { class: "controls" }, st.remove), st.confirm,
    removal.error, removal.note);

  // The battery's charge, as every surface shows it (null until the thermostat reports it).
  st.battery = el("p", { class: "note", id: id("battery") });
  c.settings = el("div", { class: "settings" }, st.battery, nameForm, ecoForm, lockForm, removeBlock);
  updateSettings(c);
  return c.settings;
}

// Fills the settings from the thermostat's status, leaving alone what the person is typing.
function updateSettings(c) {
  const st = c.st, d = c.data, name = nameOf(c);
  if (!st) return;
  setText(st.battery, isNum(d.battery_percent) ? `Battery ${d.battery_percent}%, charged from the heating system's wires.` : "");
  st.battery.hidden = !st.battery.textContent;
  if (document.activeElement !== st.name && !st.dirtyName) st.name.value = d.name && d.name !== d.serial ? d.name : "";
  setAttr(st.name, "aria-label", "Name of " + name);
  setAttr(st.rename, "aria-label", "Rename " + name);
  const step = isF(d) ? "1" : "0.5";
  const eco = d.eco_temperatures || {};
  for (const [input, value] of [[st.ecoLow, eco.low], [st.ecoHigh, eco.high]]) {
    input.step = step;
    if (!st.dirtyEco && document.activeElement !== input) input.value = typeof value === "number" ? inputValue(value, d) : "";
  }
  setText(st.ecoUnit, unit(d));
  setAttr(st.ecoLow, "aria-label", `Eco heat-to temperature of ${name}, ${unit(d)}`);
  setAttr(st.ecoHigh, "aria-label", `Eco cool-to temperature of ${name}, ${unit(d)}`);
  setAttr(st.ecoSave, "aria-label", "Save eco temperatures of " + name);
  const lock = d.temperature_lock || {};
  setText(st.lockState, lock.enabled
    ? `Locked: the thermostat asks for the PIN to go outside ${show(lock.low, d)}–${show(lock.high, d)}.`
    : "Off. With a lock, the thermostat's dial stays within a range unless someone enters the PIN.");
  st.lockFields.hidden = !!lock.enabled;
  st.lockOff.hidden = !lock.enabled;
  for (const input of [st.lockLow, st.lockHigh]) input.step = step;
  const bounds = d.temperature_bounds || {};
  if (!st.lockLow.value && typeof bounds.low === "number") st.lockLow.value = inputValue(Math.max(bounds.low, 16), d);
  if (!st.lockHigh.value && typeof bounds.high === "number") st.lockHigh.value = inputValue(Math.min(bounds.high, 24), d);
  setText(st.lockUnit, unit(d));
  setAttr(st.pin, "aria-label", "4-digit PIN for the lock of " + name);
  setAttr(st.lockLow, "aria-label", `Lowest temperature the lock of ${name} allows, ${unit(d)}`);
  setAttr(st.lockHigh, "aria-label", `Highest temperature the lock of ${name} allows, ${unit(d)}`);
  setAttr(st.lockOn, "aria-label", "Lock the temperature of " + name);
  setAttr(st.lockOff, "aria-label", "Unlock the temperature of " + name);
  setAttr(st.remove, "aria-label", `Remove ${name} from hearth`);
  setAttr(st.confirmYes, "aria-label", `Yes, remove ${name}`);
  setAttr(st.confirmNo, "aria-label", `Keep ${name}`);
  setText(st.confirmText, `Remove ${name}? It keeps heating and cooling on its own settings and schedule, and hearth keeps its state and history, but it is no longer yours: it waits under "Waiting to be added" until you add it again (or claim it with its entry code).`);
}

// Why a pair of temperatures is outside what the thermostat allows (the server would clamp it,
// and the page would then say a value that was not stored), or null.
function outsideBounds(value, d) {
  const b = d.temperature_bounds;
  if (!b || typeof b.low !== "number" || typeof b.high !== "number") return null;
  if (value.low >= lowest(b) && value.high <= highest(b)) return null;
  return `This thermostat allows ${show(lowest(b), d)} to ${show(highest(b), d)}.`;
}

async function removeThermostat(c) {
  const st = c.st, name = nameOf(c);
  st.confirmYes.disabled = true;
  const r = await callJSON("DELETE", "api/device", { serial: c.serial })
    .catch((e) => ({ ok: false, status: 0, body: { message: "hearth did not answer (" + e.message + ")" } }));
  st.confirmYes.disabled = false;
  if (!r.ok || r.body.success === false) {
    st.removal.error.textContent = r.body.message || r.body.error || "Could not remove it (HTTP " + r.status + ")";
    return;
  }
  const notice = document.getElementById("notice");
  notice.textContent = `${name} was removed. It keeps running on its own and waits under "Waiting to be added".`;
  notice.tabIndex = -1;
  notice.focus();
  dropCard(c);
  devicesSoon();
}

// SHA-1 over the UTF-8 bytes of `text`, as standard Base64: the temperature lock's PIN hash.
// Written out because the browser's own (crypto.subtle) exists only on secure (HTTPS) and localhost
// pages, and hearth is usually opened over plain http on a home network.
function sha1Base64(text) {
  const bytes = new TextEncoder().encode(text);
  const n = bytes.length;
  const words = new Uint32Array((((n + 8) >> 6) + 1) * 16);
  for (let i = 0; i < n; i++) words[i >> 2] |= bytes[i] << (24 - (i % 4) * 8);
  words[n >> 2] |= 0x80 << (24 - (n % 4) * 8);
  words[words.length - 1] = n * 8;
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  const rol = (x, k) => (x << k) | (x >>> (32 - k));
  for (let off = 0; off < words.length; off += 16) {
    for (let t = 0; t < 80; t++) w[t] = t < 16 ? words[off + t] : rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    let [a, b, c, d, e] = h;
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? (b & c) | (~b & d) : t < 40 ? b ^ c ^ d : t < 60 ? (b & c) | (b & d) | (c & d) : b ^ c ^ d;
      const k = t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6;
      const next = (rol(a, 5) + f + e + k + w[t]) >>> 0;
      e = d; d = c; c = rol(b, 30) >>> 0; b = a; a = next;
    }
    h[0] = (h[0] + a) >>> 0; h[1] = (h[1] + b) >>> 0; h[2] = (h[2] + c) >>> 0; h[3] = (h[3] + d) >>> 0; h[4] = (h[4] + e) >>> 0;
  }
  let binary = "";
  for (const x of h) for (let shift = 24; shift >= 0; shift -= 8) binary += String.fromCharCode((x >>> shift) & 255);
  return btoa(binary);
}
