"use strict";
// ---- the schedule editor: a week of setpoints on one time axis, edited here and saved whole ----
// Days are the thermostat's own keys ("0" is Monday). A day's entry at 00:00 of type
// "continuation" is the day before's last setting carried over: drawn as such, never a handle,
// and left out when the day gets a setpoint of its own at 00:00. Each setpoint is a handle
// (two for a heat·cool range: heat-to and cool-to) at its time across and its temperature up
// the day's row; dragging it (mouse or finger, one Pointer Events path) moves it by 15 minutes
// and by the thermostat's step (0.5 °C or 1 °F), as the arrow keys do. Temperatures are stored
// in Celsius on the 0.5 °C grid (every whole °F survives the round trip); an entry nobody
// touched keeps its stored value exactly. "Today" and the line at now are the structure's
// time zone's, as /api/schedule gives them. The editor is a dialog: nothing on the page
// behind it moves when it opens.
const SCHEDULE_MODES = { HEAT: "Heat", COOL: "Cool", RANGE: "Heat · Cool" };
let entryIds = 0;
// The week in seconds, and the step a setpoint moves by in time.
const WEEK_S = 7 * 86400, STEP_S = 900, LAST_S = 86400 - STEP_S;
// A time of day (seconds since midnight) in the browser's own clock format, as the rest of the
// page writes times ("22:00", "10:00 PM"), and an hour of the axis the same way ("18", "6 PM").
const dayClock = (t) => new Date(2000, 0, 3, Math.floor(t / 3600), Math.floor((t % 3600) / 60));
const dayTime = (t) => clockTime(dayClock(t));
const dayHour = (h) => clockHour(dayClock(h * 3600));
// Carried-over entry first, then by time: the order a day is shown in.
const inOrder = (a, b) => (b.carried - a.carried) || (a.e.time - b.e.time);
function allowedModes(d) {
  const modes = [];
  if (d.can_heat) modes.push("HEAT");
  if (d.can_cool) modes.push("COOL");
  if (d.can_heat && d.can_cool) modes.push("RANGE");
  return modes;
}

// A day's carried-over entry repeats the last setpoint before it (the day before's, or the one
// before that if that day has none), so it follows every edit of the days before it.
function carryOver(model) {
  model.days.forEach((entries, i) => {
    const carried = entries.find((x) => x.carried);
    if (!carried) return;
    for (let back = 1; back <= 7; back++) {
      const before = model.days[(i + 7 - back) % 7].filter((x) => !x.carried);
      if (!before.length) continue;
      const last = before.reduce((a, b) => (b.e.time > a.e.time ? b : a));
      const e = { ...carried.e, type: last.e.type };
      for (const f of ["temp", "temp-min", "temp-max"]) if (typeof last.e[f] === "number") e[f] = last.e[f]; else delete e[f];
      carried.e = e;
      return;
    }
  });
}

function scheduleModel(stored, d) {
  const days = [];
  for (let i = 0; i < 7; i++) {
    const raw = stored && stored.days ? stored.days[String(i)] : null;
    const list = (Array.isArray(raw) ? raw : Object.values(raw || {}))
      .filter((e) => e && typeof e.time === "number").sort((a, b) => a.time - b.time);
    days.push(list.map((e) => ({ id: ++entryIds, e: { ...e },
      carried: e.entry_type === "continuation" && e.time === 0 })));
  }
  const mode = (stored && stored.schedule_mode) || allowedModes(d)[0] || "HEAT";
  return { mode, name: (stored && stored.name) || "", days };
}

// The Schedule button on the card and the dialog it opens (the card itself does not change).
function scheduleSection(c) {
  const s = c.serial;
  c.schedule = el("div", { class: "editor" });
  c.scheduleTitle = el("h2", { id: "schedule-title-" + s });
  const close = el("button", { type: "button", class: "close", id: "schedule-close-" + s }, "Close");
  const dialog = el("dialog", { class: "schedule", id: "schedule-" + s, "aria-labelledby": c.scheduleTitle.id },
    el("div", { class: "dialog-head" }, c.scheduleTitle, close), c.schedule);
  const open = el("button", { type: "button", class: "open-schedule", id: "schedule-open-" + s, "aria-haspopup": "dialog" }, "Schedule");
  c.scheduleDetails = dialog;
  c.scheduleOpen = open;
  c.scheduleClose = close;
  // Opening loads what is stored; an edit in progress is kept while the dialog is closed.
  open.addEventListener("click", () => {
    dialog.showModal();
    if (!(c.ed && c.ed.dirty)) loadSchedule(c);
    else { placeNow(c); c.ed.status.focus(); }
  });
  close.addEventListener("click", () => dialog.close());
  labelEditor(c);
  return el("div", { class: "schedule-open" }, open, dialog);
}

// `keep`: an edit begun while the schedule was loading is not replaced; the person is asked.
async function loadSchedule(c, keep) {
  if (!c.ed) c.schedule.replaceChildren(el("p", { class: "note" }, "Loading…"));
  const r = await getJSON("api/schedule?serial=" + encodeURIComponent(c.serial)).catch(() => ({ ok: false, body: {} }));
  if (keep && c.ed && c.ed.dirty) {
    if (r.ok) showConflict(c, r.body.object_revision ?? null);
    return false;
  }
  if (!r.ok) {
    c.schedule.replaceChildren(el("p", { class: "error" }, r.body.error || "Could not load the schedule"));
    c.ed = null;
    return false;
  }
  const was = c.ed;
  c.ed = { stored: r.body.schedule, revision: r.body.object_revision ?? null, limits: r.body.limits || { low: 4.5, high: 32 },
    model: scheduleModel(r.body.schedule, c.data), dirty: false, conflict: false, saving: false,
    now: nowFrom(r.body.now), selected: { day: null, entry: null, which: null } };
  const ed = c.ed;
  // The day shown stays the one chosen, else today.
  ed.selected.day = was && was.selected.day !== null ? was.selected.day : todayOf(ed);
  ed.scale = scaleOf(c);
  // Focus stays where it was: the rebuilt Save, Discard or mode control, else the status line.
  const active = document.activeElement;
  const within = active && c.schedule.contains(active);
  const key = within ? active.dataset.focusKey : null;
  buildEditor(c);
  if (within) (c.schedule.querySelector(`[data-focus-key="${key}"]`) || ed.status).focus();
  if (!r.body.schedule) ed.status.textContent = "This thermostat has sent no schedule yet: add setpoints and save to give it one.";
  return true;
}

// Where the week stands, as the server says in the structure's time zone (else the browser's
// clock), and when it said it: the line at now moves on from there.
function nowFrom(now) {
  if (now && Number.isFinite(now.day) && Number.isFinite(now.time)) {
    return { at: now.day * 86400 + now.time, since: Date.now(), zone: now.time_zone || "", fallback: now.time_zone_source === "fallback" };
  }
  const d = new Date();
  return { at: ((d.getDay() + 6) % 7) * 86400 + d.getHours() * 3600 + d.getMinutes() * 60 + d.getSeconds(), since: Date.now(), zone: "" };
}
const weekNow = (ed) => (ed.now.at + Math.floor((Date.now() - ed.now.since) / 1000)) % WEEK_S;
const todayOf = (ed) => Math.floor(weekNow(ed) / 86400);

// The temperatures a day's row spans: the schedule's, a few degrees either side, within the
// limits. Fixed while an edit goes on (a handle never runs from the pointer), widened when a
// setpoint leaves it.
function scaleOf(c, was) {
  const ed = c.ed, lim = ed.limits, temps = [];
  for (const day of ed.model.days) for (const x of day) for (const f of ["temp", "temp-min", "temp-max"]) {
    if (typeof x.e[f] === "number") temps.push(x.e[f]);
  }
  let lo = Math.min(...temps, was ? was.lo : 18) - 1, hi = Math.max(...temps, was ? was.hi : 22) + 1;
  if (hi - lo < 8) { const mid = (hi + lo) / 2; lo = mid - 4; hi = mid + 4; }
  lo = Math.max(lowest(lim), Math.floor(lo)); hi = Math.min(highest(lim), Math.ceil(hi));
  return { lo, hi: Math.max(hi, lo + 1) };
}

function buildEditor(c) {
  const ed = c.ed, d = c.data, s = c.serial;
  const modes = allowedModes(d);
  const options = modes.includes(ed.model.mode) ? modes : [ed.model.mode, ...modes];
  ed.modeSelect = el("select", { id: "schedule-mode-" + s, "data-focus-key": "mode", onchange: (ev) => changeMode(c, ev.target.value) },
    ...options.map((m) => el("option", modes.includes(m) ? { value: m } : { value: m, disabled: "" },
      SCHEDULE_MODES[m] + (modes.includes(m) ? "" : " (this thermostat cannot)"))));
  ed.modeSelect.value = ed.model.mode;
  ed.week = el("div", { class: "wk", role: "group", "aria-describedby": "schedule-help-" + s });
  ed.panel = el("div", { class: "wk-panel" });
  ed.banner = el("div", { class: "banner", role: "alert", hidden: "" });
  ed.message = el("div", { class: "error", id: "schedule-error-" + s, role: "alert" });
  ed.status = el("p", { class: "note", id: "schedule-status-" + s, role: "status", tabindex: "-1" });
  ed.save = el("button", { type: "button", class: "primary", id: "schedule-save-" + s, "data-focus-key": "save",
    onclick: () => saveSchedule(c) }, "Save schedule");
  ed.discard = el("button", { type: "button", id: "schedule-discard-" + s, "data-focus-key": "discard",
    onclick: () => discardSchedule(c) }, "Discard changes");
  const lim = ed.limits;
  const zone = !ed.now.zone ? "" : ed.now.fallback ? ` The thermostat has not given a time zone hearth knows: today and now are ${ed.now.zone}'s.`
    : ` Today and now are ${ed.now.zone}'s.`;
  c.schedule.replaceChildren(
    el("div", { class: "controls" }, el("label", { for: ed.modeSelect.id }, "Schedule mode"), ed.modeSelect),
    ed.banner, ed.week,
    el("p", { class: "note", id: "schedule-help-" + s }, `Drag a setpoint across to change its time, up or down to change its temperature (${unit(d)}, ${show(lowest(lim), d)} to ${show(highest(lim), d)}); tap an empty place in a day's row to add one. With the keyboard: ← → move 15 minutes, ↑ ↓ change the temperature, Delete removes.${zone}`),
    ed.panel, ed.message,
    el("div", { class: "controls" }, ed.save, ed.discard),
    ed.status);
  labelEditor(c);
  renderWeek(c);
}

// Names that carry the thermostat's name: set again when it is renamed.
function labelEditor(c) {
  if (c.scheduleTitle) {
    setText(c.scheduleTitle, "Schedule of " + nameOf(c));
    setAttr(c.scheduleOpen, "aria-label", "Schedule of " + nameOf(c));
    setAttr(c.scheduleClose, "aria-label", "Close the schedule of " + nameOf(c));
  }
  const ed = c.ed;
  if (!ed || !ed.save) return;
  if (ed.labelled && ed.labelled !== nameOf(c)) renderWeek(c);
  setAttr(ed.week, "aria-label", "Week of " + nameOf(c));
  setAttr(ed.modeSelect, "aria-label", "Schedule mode of " + nameOf(c));
  setAttr(ed.save, "aria-label", "Save the schedule of " + nameOf(c));
  setAttr(ed.discard, "aria-label", "Discard changes to the schedule of " + nameOf(c));
}

// The handles of an entry: one, or a range's heat-to and cool-to.
const handleFields = (e) => (e.type === "RANGE" ? ["temp-min", "temp-max"] : ["temp"]);
const fieldName = { temp: "", "temp-min": "heat to ", "temp-max": "cool to " };
const handleKey = (entry, field) => `h-${entry.id}-${field}`;
const pct = (t) => (t / 86400) * 100;
// Positions set through the DOM: the page's Content-Security-Policy refuses style attributes.
function placed(node, styles) { Object.assign(node.style, styles); return node; }
// Up the row: the scale's top at 12 %, its bottom at 88 %.
function heightOf(ed, c) { return 88 - (76 * (c - ed.scale.lo)) / (ed.scale.hi - ed.scale.lo); }

function renderWeek(c) {
  const ed = c.ed;
  carryOver(ed.model);
  for (const day of ed.model.days) day.sort(inOrder);
  const used = scaleOf(c, ed.scale);
  if (used.lo < ed.scale.lo || used.hi > ed.scale.hi) ed.scale = used;
  // Focus comes back to the same control only if it was in this editor.
  const active = document.activeElement;
  const focused = active && ed.week.contains(active) ? active.dataset.focusKey : null;
  const axis = el("div", { class: "wk-axis", "aria-hidden": "true" }, el("span", {}),
    el("div", {}, ...[0, 6, 12, 18].map((h) => placed(el("span", {}, dayHour(h)), { left: pct(h * 3600) + "%" }))));
  ed.week.replaceChildren(axis, ...ed.model.days.map((_, i) => renderDay(c, i)));
  ed.labelled = nameOf(c);
  for (const track of ed.week.querySelectorAll(".wk-track")) fitEnds(track);
  placeNow(c);
  if (ed.listed) markInvalid(c, scheduleProblems(c));
  if (focused) {
    const again = ed.week.querySelector(`[data-focus-key="${focused}"]`);
    if (again) again.focus();
  }
  renderPanel(c);
}

function renderDay(c, i) {
  const ed = c.ed, d = c.data, day = DAYS[i];
  const entries = ed.model.days[i];
  const today = i === todayOf(ed);
  const pick = el("button", { type: "button", class: "wk-day", "data-focus-key": "day-" + i,
    "aria-pressed": String(ed.selected.day === i), "aria-label": day + (today ? ", today" : ""),
    onclick: () => select(c, i, null, null) }, day.slice(0, 3), today ? el("span", { class: "wk-today" }, "today") : null);
  const track = el("div", { class: "wk-track", "data-day": String(i) });
  const lines = el("div", { class: "wk-lines", "aria-hidden": "true" });
  track.append(lines);
  drawLines(c, i, lines);
  const carried = entries.find((x) => x.carried);
  if (carried) {
    // Said, not drawn as a handle: the day before's last setting, carried over.
    const e = carried.e;
    const temp = e.type === "RANGE" ? `${show(e["temp-min"], d)}–${show(e["temp-max"], d)}` : show(e.temp, d);
    track.append(el("span", { class: "sr" }, `${dayTime(0)} ${temp}, carried over from ${DAYS[(i + 6) % 7]}`));
  }
  for (const entry of entries) if (!entry.carried) for (const field of handleFields(entry.e)) track.append(handle(c, i, entry, field));
  if (!entries.some((x) => !x.carried)) track.append(el("span", { class: "sr" }, "No setpoints"));
  // A tap is a press and a click on the row itself: a drag's end is none (its click can land
  // on the row once the handle is redrawn).
  let pressed = false;
  track.addEventListener("pointerdown", (ev) => { pressed = !ev.target.closest(".wk-handle"); });
  track.addEventListener("click", (ev) => {
    if (!pressed || ev.target.closest(".wk-handle")) return;
    pressed = false;
    const r = track.getBoundingClientRect();
    addAt(c, i, Math.round(((ev.clientX - r.left) / r.width) * 96) * STEP_S, tempAt(c, (ev.clientY - r.top) / r.height));
  });
  return el("section", { class: "wk-row" + (today ? " today" : "") + (ed.selected.day === i ? " selected" : ""),
    "data-day": String(i), "aria-label": day }, pick, track);
}

// The setting held through a day: a step line per setpoint (two for a range), the carried-over
// one dashed.
function drawLines(c, i, lines) {
  const ed = c.ed, entries = ed.model.days[i].filter((x) => !(x.carried && ed.model.days[i].some((y) => !y.carried && y.e.time === 0)));
  const parts = [];
  entries.forEach((x, k) => {
    const end = k + 1 < entries.length ? entries[k + 1].e.time : 86400;
    for (const field of handleFields(x.e)) {
      if (typeof x.e[field] !== "number") continue;
      const kind = field === "temp-min" ? "heat" : field === "temp-max" ? "cool" : x.e.type === "COOL" ? "cool" : "heat";
      parts.push(placed(el("span", { class: `wk-line ${kind}${x.carried ? " carried" : ""}` }),
        { left: pct(x.e.time) + "%", width: pct(end - x.e.time) + "%", top: heightOf(ed, x.e[field]) + "%" }));
    }
  });
  lines.replaceChildren(...parts);
}

function handleText(c, i, entry, field) {
  const d = c.data;
  return `${DAYS[i]} ${dayTime(entry.e.time)}, ${fieldName[field]}${show(entry.e[field], d)}`;
}

function handle(c, i, entry, field) {
  const ed = c.ed, e = entry.e;
  const kind = field === "temp-min" ? "heat" : field === "temp-max" ? "cool" : e.type === "COOL" ? "cool" : "heat";
  const selected = ed.selected.entry === entry && ed.selected.which === field;
  const end = field === "temp-min" ? " low" : field === "temp-max" ? " high" : "";
  const h = el("div", { class: `wk-handle ${kind}${end}${selected ? " selected" : ""}`, role: "slider", tabindex: "0",
    "data-focus-key": handleKey(entry, field), "data-entry": String(entry.id), "data-field": field,
    "aria-valuemin": "0", "aria-valuemax": String(LAST_S / 60) }, deg(e[field], c.data));
  placeHandle(c, i, entry, field, h);
  h.addEventListener("keydown", (ev) => handleKey_(c, i, entry, field, ev));
  h.addEventListener("click", (ev) => ev.stopPropagation());
  dragging(c, i, entry, field, h);
  return h;
}

function placeHandle(c, i, entry, field, h) {
  const text = handleText(c, i, entry, field);
  h.style.left = pct(entry.e.time) + "%";
  h.style.top = heightOf(c.ed, entry.e[field]) + "%";
  setText(h, deg(entry.e[field], c.data));
  setAttr(h, "aria-label", text);
  setAttr(h, "aria-valuenow", String(entry.e.time / 60));
  setAttr(h, "aria-valuetext", text);
}

// A range's pair of handles, side by side at its time, is moved in from the row's ends so
// neither is cut off (the handles' time is still where the pair meets).
function fitEnds(track) {
  const w = track.clientWidth;
  if (!w) return;
  for (const high of track.querySelectorAll(".wk-handle.high")) {
    const low = track.querySelector(`.wk-handle.low[data-entry="${high.dataset.entry}"]`);
    if (!low) continue;
    const x = (parseFloat(high.style.left) / 100) * w;
    const over = x + 1 + high.offsetWidth - (w + 14), under = x - 1 - low.offsetWidth + 4;
    const shift = over > 0 ? -over : under < 0 ? -under : 0;
    for (const h of [low, high]) h.style.marginLeft = shift ? shift + "px" : "";
  }
}

// The next free time of a day from `t` on in steps of `dir` (another setpoint's time is
// stepped over), or null past either end.
function freeTime(c, i, entry, t, dir) {
  const taken = new Set(c.ed.model.days[i].filter((x) => !x.carried && x !== entry).map((x) => x.e.time));
  for (; t >= 0 && t <= LAST_S; t += dir * STEP_S) if (!taken.has(t)) return t;
  return null;
}

// A temperature moved to `value` (°C), on the grid, within the limits, and a range's ends
// kept apart by half a degree.
function setTemp(c, entry, field, value) {
  const ed = c.ed, lim = ed.limits, e = entry.e;
  let v = within(value, lim);
  if (field === "temp-min" && typeof e["temp-max"] === "number") v = Math.min(v, e["temp-max"] - 0.5);
  if (field === "temp-max" && typeof e["temp-min"] === "number") v = Math.max(v, e["temp-min"] + 0.5);
  if (v === e[field]) return false;
  e[field] = v;
  return true;
}
// The temperature at a height of a row (0 top, 1 bottom), on the thermostat's own step.
function tempAt(c, y) {
  const ed = c.ed, d = c.data;
  const raw = ed.scale.lo + ((88 - y * 100) / 76) * (ed.scale.hi - ed.scale.lo);
  return half(fromScale(isF(d) ? Math.round(toScale(raw, d)) : Math.round(raw * 2) / 2, d));
}

function handleKey_(c, i, entry, field, ev) {
  const e = entry.e, d = c.data;
  let changed = false;
  if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
    // To the next quarter hour that way: 07:10 goes on to 07:15 and back to 07:00.
    const dir = ev.key === "ArrowRight" ? 1 : -1;
    const next = dir > 0 ? Math.floor(e.time / STEP_S) * STEP_S + STEP_S : Math.ceil(e.time / STEP_S) * STEP_S - STEP_S;
    const t = freeTime(c, i, entry, next, dir);
    if (t !== null) { e.time = t; changed = true; }
  } else if (ev.key === "ArrowUp" || ev.key === "ArrowDown") {
    changed = setTemp(c, entry, field, half(stepped(e[field], d, ev.key === "ArrowUp" ? 1 : -1)));
  } else if (ev.key === "Enter" || ev.key === " ") {
    // Chosen: the panel below offers to remove it.
    ev.preventDefault();
    select(c, i, entry, field);
    return;
  } else if (ev.key === "Delete" || ev.key === "Backspace") {
    ev.preventDefault();
    removeEntry(c, i, entry);
    return;
  } else return;
  ev.preventDefault();
  if (!changed) return;
  touched(c);
  renderWeek(c);
}

// One path for a mouse, a pen and a finger: the handle keeps the pointer until it is let go,
// follows it in 15-minute and one-step moves, and the day is redrawn once at the end.
function dragging(c, i, entry, field, h) {
  let start = null;
  h.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    ev.preventDefault();
    h.focus();
    select(c, i, entry, field);
    h.setPointerCapture(ev.pointerId);
    const track = h.parentElement.getBoundingClientRect();
    start = { x: ev.clientX, y: ev.clientY, time: entry.e.time, temp: entry.e[field], track, moved: false };
  });
  h.addEventListener("pointermove", (ev) => {
    if (!start || !h.hasPointerCapture(ev.pointerId)) return;
    const ed = c.ed, d = c.data;
    // Across in quarter hours (onto the quarter-hour grid), up the row warmer in the
    // thermostat's own steps; back where it started, the stored value exactly as it was.
    const steps = Math.round(((ev.clientX - start.x) / start.track.width) * 96);
    const wanted = steps ? Math.min(LAST_S, Math.max(0, Math.round(start.time / STEP_S + steps) * STEP_S)) : start.time;
    const dir = wanted >= entry.e.time ? 1 : -1;
    const t = freeTime(c, i, entry, wanted, dir) ?? freeTime(c, i, entry, wanted, -dir);
    const perScale = (76 / 100) * start.track.height / (toScale(ed.scale.hi, d) - toScale(ed.scale.lo, d));
    const rise = Math.round((start.y - ev.clientY) / perScale / (isF(d) ? 1 : 0.5));
    const inScale = isF(d) ? Math.round(toScale(start.temp, d)) + rise : half(start.temp) + rise * 0.5;
    let moved = false;
    if (t !== null && t !== entry.e.time) { entry.e.time = t; moved = true; }
    if (!rise) {
      if (entry.e[field] !== start.temp) { entry.e[field] = start.temp; moved = true; }
    } else if (setTemp(c, entry, field, half(fromScale(inScale, d)))) moved = true;
    if (!moved) return;
    start.moved = true;
    ed.dirty = true;
    carryOver(ed.model);
    for (const other of h.parentElement.querySelectorAll(".wk-handle")) {
      if (other.dataset.entry === String(entry.id)) placeHandle(c, i, entry, other.dataset.field, other);
    }
    drawLines(c, i, h.parentElement.querySelector(".wk-lines"));
    fitEnds(h.parentElement);
  });
  const end = (ev) => {
    if (!start) return;
    const moved = start.moved;
    start = null;
    if (h.hasPointerCapture(ev.pointerId)) h.releasePointerCapture(ev.pointerId);
    if (moved) { touched(c); renderWeek(c); }
  };
  h.addEventListener("pointerup", end);
  h.addEventListener("pointercancel", end);
}

// The line at now, on today's row.
function placeNow(c) {
  const ed = c.ed;
  if (!ed || !ed.week) return;
  const now = weekNow(ed), day = Math.floor(now / 86400);
  let line = ed.week.querySelector(".wk-now");
  const track = ed.week.querySelector(`.wk-track[data-day="${day}"]`);
  if (!track) return;
  if (!line || line.parentElement !== track) {
    if (line) line.remove();
    line = el("span", { class: "wk-now", "aria-hidden": "true" });
    track.prepend(line);
  }
  line.style.left = pct(now % 86400) + "%";
  line.title = "Now, " + dayTime(now % 86400);
}
// The line moves on while the dialog is open.
setInterval(() => { for (const c of cards.values()) if (c.ed && c.scheduleDetails && c.scheduleDetails.open) placeNow(c); }, 30000);

function select(c, day, entry, field, quiet) {
  const ed = c.ed;
  const same = ed.selected.day === day && ed.selected.entry === entry && ed.selected.which === field;
  ed.selected = { day, entry, which: field };
  if (same) return;
  for (const row of ed.week.querySelectorAll(".wk-row")) {
    const on = row.dataset.day === String(day);
    row.classList.toggle("selected", on);
    setAttr(row.querySelector(".wk-day"), "aria-pressed", String(on));
  }
  for (const h of ed.week.querySelectorAll(".wk-handle")) {
    h.classList.toggle("selected", !!entry && h.dataset.entry === String(entry.id) && h.dataset.field === field);
  }
  renderPanel(c);
  if (!quiet) ed.status.textContent = "";
}

// What can be done with the chosen day and setpoint: add, remove, copy to other days.
function renderPanel(c) {
  const ed = c.ed, d = c.data, name = nameOf(c);
  const i = ed.selected.day, entry = ed.selected.entry, day = DAYS[i];
  if (entry && !ed.model.days[i].includes(entry)) ed.selected.entry = null;
  const parts = [el("h3", {}, day + (i === todayOf(ed) ? " (today)" : ""))];
  const chosen = ed.selected.entry;
  if (chosen) {
    const e = chosen.e;
    const temp = e.type === "RANGE" ? `heat to ${show(e["temp-min"], d)}, cool to ${show(e["temp-max"], d)}` : show(e.temp, d);
    parts.push(el("div", { class: "controls" }, el("span", {}, `${dayTime(e.time)}: ${temp}`),
      el("button", { type: "button", class: "remove", "data-focus-key": "remove",
        "aria-label": `Remove ${dayTime(e.time)} on ${day} from ${name}`, onclick: () => removeEntry(c, i, chosen) }, "Remove setpoint")));
  }
  const add = el("button", { type: "button", "data-focus-key": "add", "aria-label": `Add a setpoint on ${day} to ${name}`,
    onclick: () => addEntry(c, i) }, "Add setpoint");
  const toggle = el("button", { type: "button", "data-focus-key": "copy", "aria-expanded": "false",
    "aria-label": `Copy ${day} of ${name} to other days` }, "Copy to other days…");
  const panel = copyPanel(c, i);
  toggle.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) panel.querySelector("input").focus();
  });
  parts.push(el("div", { class: "controls" }, add, toggle), panel);
  const active = document.activeElement;
  const key = active && ed.panel.contains(active) ? active.dataset.focusKey : null;
  ed.panel.replaceChildren(...parts);
  if (key) {
    const again = ed.panel.querySelector(`[data-focus-key="${key}"]`);
    if (again) again.focus();
  }
}

function copyPanel(c, i) {
  const day = DAYS[i];
  const panel = el("fieldset", { class: "copy", hidden: "" }, el("legend", {}, `Copy ${day}'s setpoints to`));
  const boxes = [];
  DAYS.forEach((other, j) => {
    if (j === i) return;
    const box = el("input", { type: "checkbox", value: String(j), id: `copy-${c.serial}-${i}-${j}` });
    boxes.push(box);
    panel.append(el("label", { class: "check", for: box.id }, box, other));
  });
  const note = el("p", { class: "error", role: "alert" });
  const copy = (targets) => {
    if (!targets.length) { note.textContent = "Choose at least one day."; return; }
    const source = c.ed.model.days[i].filter((x) => !x.carried);
    for (const j of targets) {
      const carried = c.ed.model.days[j].filter((x) => x.carried);
      c.ed.model.days[j] = carried.concat(source.map((x) => ({ id: ++entryIds, e: { ...x.e }, carried: false })));
    }
    c.ed.selected.entry = null;
    touched(c);
    renderWeek(c);
    c.ed.status.textContent = `Copied ${day} to ${targets.length === 6 ? "every other day" : targets.map((j) => DAYS[j]).join(", ")}. Save to send it to the thermostat.`;
    const back = c.ed.panel.querySelector('[data-focus-key="copy"]');
    if (back) back.focus();
  };
  panel.append(el("div", { class: "controls" },
    el("button", { type: "button", "aria-label": `Copy ${day} to the chosen days`,
      onclick: () => copy(boxes.filter((b) => b.checked).map((b) => +b.value)) }, "Copy to the chosen days"),
    el("button", { type: "button", "aria-label": `Copy ${day} to every other day`,
      onclick: () => copy(boxes.map((b) => +b.value)) }, "Copy to every other day")), note);
  return panel;
}

function touched(c) {
  const ed = c.ed;
  ed.dirty = true;
  ed.status.textContent = "";
  // Once problems are listed, the list follows the edit, so a fixed one does not linger.
  if (ed.listed) showProblems(c, scheduleProblems(c));
}

// A message in the editor's alert slot, in place of any list of problems.
function say(ed, text) {
  delete ed.message.dataset.key;
  ed.message.textContent = text;
}

function showProblems(c, problems) {
  const ed = c.ed;
  markInvalid(c, problems);
  ed.listed = problems.length > 0;
  // Rewritten only when the list changes: the alert is not read out again on every keystroke.
  const key = problems.map((p) => p.text).join("\n");
  if (ed.message.dataset.key === key) return;
  ed.message.dataset.key = key;
  if (problems.length) ed.message.replaceChildren(el("p", {}, "Not saved yet:"), el("ul", {}, ...problems.map((p) => el("li", {}, p.text))));
  else ed.message.replaceChildren();
}

function focusHandle(c, entry, field) {
  const h = c.ed.week.querySelector(`[data-focus-key="${handleKey(entry, field)}"]`);
  if (h) h.focus();
}

// A setpoint where the day's row was tapped: the previous one's temperatures in a range (or
// the tapped height for its heat-to), the tapped height otherwise.
function addAt(c, i, time, temp) {
  const ed = c.ed, lim = ed.limits, mode = ed.model.mode;
  const t = freeTime(c, i, null, Math.min(LAST_S, Math.max(0, time)), 1) ?? freeTime(c, i, null, LAST_S, -1);
  if (t === null) return;
  const before = ed.model.days[i].filter((x) => !x.carried && x.e.time < t).pop();
  const e = { time: t, type: mode, entry_type: "setpoint" };
  if (mode === "RANGE") {
    const was = (f, dflt) => (before && typeof before.e[f] === "number" ? before.e[f] : dflt);
    e["temp-min"] = within(temp ?? was("temp-min", 20), lim);
    e["temp-max"] = within(Math.max(e["temp-min"] + 0.5, was("temp-max", e["temp-min"] + 4)), lim);
  } else {
    e.temp = within(temp, lim);
  }
  const entry = { id: ++entryIds, e, carried: false };
  ed.model.days[i].push(entry);
  ed.selected = { day: i, entry, which: handleFields(e)[0] };
  touched(c);
  renderWeek(c);
  focusHandle(c, entry, handleFields(e)[0]);
  ed.status.textContent = `Added ${dayTime(t)} on ${DAYS[i]}. Save to send it to the thermostat.`;
}

// The Add button: an hour after the day's last setpoint (else 06:00), at its temperature.
function addEntry(c, i) {
  const ed = c.ed, mode = ed.model.mode;
  const setpoints = ed.model.days[i].filter((x) => !x.carried);
  const last = setpoints[setpoints.length - 1];
  let time = last ? Math.ceil((last.e.time + 3600) / STEP_S) * STEP_S : 6 * 3600;
  if (time > LAST_S) time = 6 * 3600;
  const was = (f) => (last && typeof last.e[f] === "number" ? last.e[f] : null);
  addAt(c, i, time, mode === "RANGE" ? was("temp-min") ?? 20 : was("temp") ?? (mode === "COOL" ? 24 : 20));
}

function removeEntry(c, i, entry) {
  const ed = c.ed;
  ed.model.days[i] = ed.model.days[i].filter((x) => x !== entry);
  ed.selected = { day: i, entry: null, which: null };
  touched(c);
  renderWeek(c);
  ed.status.textContent = `Removed ${dayTime(entry.e.time)} on ${DAYS[i]}.`;
  const next = ed.week.querySelector(`.wk-track[data-day="${i}"] .wk-handle`) || ed.panel.querySelector('[data-focus-key="add"]');
  next.focus();
}

// Another mode turns every setpoint into its kind: a heat setpoint becomes the heat-to end of
// a range (cool-to 3 °C above), a range keeps its heat-to end as heat, its cool-to end as cool.
function changeMode(c, mode) {
  const ed = c.ed, lim = ed.limits;
  if (mode === ed.model.mode) return;
  for (const day of ed.model.days) for (const entry of day) {
    const e = entry.e;
    if (mode === "RANGE" && e.type !== "RANGE") {
      const t = typeof e.temp === "number" ? e.temp : 20;
      const [lo, hi] = e.type === "COOL" ? [t - 3, t] : [t, t + 3];
      e["temp-min"] = within(lo, lim);
      e["temp-max"] = within(hi, lim);
      delete e.temp;
    } else if (mode !== "RANGE" && e.type === "RANGE") {
      e.temp = mode === "COOL" ? e["temp-max"] : e["temp-min"];
      delete e["temp-min"];
      delete e["temp-max"];
    }
    e.type = mode;
  }
  ed.model.mode = mode;
  touched(c);
  renderWeek(c);
  ed.status.textContent = `Every setpoint is now ${SCHEDULE_MODES[mode]}: check the temperatures, then save.`;
}

// What is wrong with the edit (a stored schedule outside today's limits, say), each with the
// handle to fix, in the order shown. Handles keep to the limits, so an edit rarely has any.
function scheduleProblems(c) {
  const ed = c.ed, d = c.data, lim = ed.limits, out = [];
  ed.model.days.forEach((entries, i) => {
    const day = DAYS[i], seen = new Set();
    for (const entry of entries) {
      if (entry.carried) continue;
      const e = entry.e;
      const at = dayTime(e.time);
      if (seen.has(e.time)) out.push({ entry, field: handleFields(e)[0], text: `${day}: two setpoints at ${at}; move or remove one.` });
      seen.add(e.time);
      let ok = true;
      for (const field of handleFields(e)) {
        if (typeof e[field] !== "number") {
          out.push({ entry, field, text: `${day} ${at}: a setpoint has no temperature.` });
          ok = false;
        } else if (e[field] < lowest(lim)) {
          out.push({ entry, field, text: `${day} ${at}: ${show(e[field], d)} is below the lowest this thermostat allows, ${show(lowest(lim), d)}.` });
          ok = false;
        } else if (e[field] > highest(lim)) {
          out.push({ entry, field, text: `${day} ${at}: ${show(e[field], d)} is above the highest this thermostat allows, ${show(highest(lim), d)}.` });
          ok = false;
        }
      }
      if (ok && e.type === "RANGE" && !(e["temp-min"] < e["temp-max"])) {
        out.push({ entry, field: "temp-max", text: `${day} ${at}: heat to ${show(e["temp-min"], d)} must be below cool to ${show(e["temp-max"], d)}.` });
      }
    }
  });
  return out;
}

function markInvalid(c, problems) {
  for (const h of c.ed.week.querySelectorAll("[aria-invalid]")) {
    h.removeAttribute("aria-invalid");
    h.removeAttribute("aria-describedby");
  }
  for (const p of problems) {
    const h = c.ed.week.querySelector(`[data-focus-key="${handleKey(p.entry, p.field)}"]`);
    if (!h) continue;
    h.setAttribute("aria-invalid", "true");
    h.setAttribute("aria-describedby", c.ed.message.id);
  }
}

// The whole schedule as set_schedule takes it.
function scheduleValue(c) {
  const ed = c.ed, m = ed.model, days = {};
  carryOver(m);
  m.days.forEach((entries, i) => {
    const midnight = entries.some((x) => !x.carried && x.e.time === 0);
    const list = entries.filter((x) => !(x.carried && midnight)).map((x) => x.e).sort((a, b) => a.time - b.time);
    const before = ed.stored && ed.stored.days && String(i) in ed.stored.days;
    if (list.length || before) days[String(i)] = list;
  });
  return { ver: 2, name: m.name, schedule_mode: m.mode, days };
}

async function saveSchedule(c) {
  const ed = c.ed;
  if (!ed || ed.saving) return;
  ed.status.textContent = "";
  say(ed, "");
  const problems = scheduleProblems(c);
  showProblems(c, problems);
  if (problems.length) {
    focusHandle(c, problems[0].entry, problems[0].field);
    return;
  }
  if (ed.conflict) {
    say(ed, "Not saved: first choose above whether to load the thermostat's new schedule or keep your changes.");
    return;
  }
  ed.saving = true;
  ed.save.disabled = true;
  try {
    // Replaces only the schedule this edit started from: a change the page has not seen (one
    // that came while the event stream was away, or just now) is refused with 409, not lost.
    const value = scheduleValue(c);
    const r = await postJSON("command", { serial: c.serial, command: "set_schedule", value, if_revision: ed.revision });
    if (r.status === 409 && /schedule changed/.test(r.body.message || "")) {
      const fresh = await getJSON("api/schedule?serial=" + encodeURIComponent(c.serial));
      showConflict(c, fresh.ok ? fresh.body.object_revision ?? null : ed.revision);
      return;
    }
    if (!r.ok || r.body.success === false) {
      say(ed, "Not saved: " + (r.body.message || r.body.error || "HTTP " + r.status) + ". Your changes are still here.");
      return;
    }
    // The shared schedule mode follows the schedule's, as set_schedule_mode sets it.
    const modeSlot = el("span", {});
    const modeOk = c.data.schedule_mode === value.schedule_mode
      || await queue(c, "set_schedule_mode", value.schedule_mode, modeSlot);
    if (await loadSchedule(c)) {
      c.ed.status.textContent = modeOk ? "Saved, sent to the thermostat."
        : "The schedule was saved, but its mode was not: " + modeSlot.textContent;
    }
  } catch (e) {
    say(ed, "Not saved: hearth did not answer (" + e.message + "). Your changes are still here.");
  } finally {
    ed.saving = false;
    ed.save.disabled = false;
  }
}

async function discardSchedule(c) {
  if (await loadSchedule(c)) c.ed.status.textContent = "Changes discarded: this is the schedule the thermostat has.";
}

function showConflict(c, revision) {
  const ed = c.ed;
  ed.conflict = true;
  ed.banner.replaceChildren(
    el("p", {}, `${nameOf(c)}'s schedule changed while you were editing (on the thermostat, or from another app). Saving now would replace that change.`),
    el("div", { class: "controls" },
      el("button", { type: "button", onclick: () => discardSchedule(c) }, "Load the new schedule"),
      el("button", { type: "button", onclick: () => {
        ed.revision = revision;
        ed.conflict = false;
        ed.banner.hidden = true;
        ed.status.textContent = "Your changes are kept: saving replaces the thermostat's schedule with them.";
        ed.save.focus();
      } }, "Keep my changes")));
  ed.banner.hidden = false;
}

// A live change of the thermostat's schedule bucket.
// Revisions only grow, so one at or below the editor's is old news (our own save, or late).
function scheduleChanged(c, revision) {
  const ed = c.ed;
  if (!ed || !c.scheduleDetails.open || (ed.revision !== null && revision <= ed.revision)) return;
  if (ed.saving) return;
  if (ed.dirty) showConflict(c, revision);
  else loadSchedule(c, true).then((ok) => { if (ok) c.ed.status.textContent = "Updated: the thermostat's schedule changed."; });
}
