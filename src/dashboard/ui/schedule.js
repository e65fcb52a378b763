"use strict";
// ---- the schedule editor: a week of setpoints, edited here and saved whole ----
// Days are the thermostat's own keys ("0" is Monday). A day's entry at 00:00 of type
// "continuation" is the day before's last setting carried over: shown, never edited, and left
// out when the day gets a setpoint of its own at 00:00. Temperatures are edited in the
// thermostat's scale and stored in Celsius rounded to 0.5 °C (what the thermostat shows, and
// hearth's rule for setpoints sent in °F: every whole °F survives the round trip); an entry
// nobody touched keeps its stored value exactly. Times are typed in 24 hours whatever the
// browser's locale (a type=time input would follow it, and show 10:00 PM on a page that says
// 22:00 everywhere else).
const SCHEDULE_MODES = { HEAT: "Heat", COOL: "Cool", RANGE: "Heat · Cool" };
let entryIds = 0;
// A time of day as typed: "07:30", "7:30", "0730", "730" or "7"; seconds, or null.
function parseTime(text) {
  const m = /^(\d{1,2})(?::?(\d{2}))?$/.exec((text || "").trim());
  if (!m) return null;
  const h = +m[1], min = m[2] === undefined ? 0 : +m[2];
  return h < 24 && min < 60 ? h * 3600 + min * 60 : null;
}
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
    days.push(list.map((e) => ({ id: ++entryIds, e: { ...e }, raw: {},
      carried: e.entry_type === "continuation" && e.time === 0 })));
  }
  const mode = (stored && stored.schedule_mode) || allowedModes(d)[0] || "HEAT";
  return { mode, name: (stored && stored.name) || "", days };
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
  c.ed = { stored: r.body.schedule, revision: r.body.object_revision ?? null, limits: r.body.limits || { low: 4.5, high: 32 },
    model: scheduleModel(r.body.schedule, c.data), dirty: false, conflict: false, saving: false };
  // Focus stays where it was: the rebuilt Save, Discard or mode control, else the status line.
  const active = document.activeElement;
  const within = active && c.schedule.contains(active);
  const key = within ? active.dataset.focusKey : null;
  buildEditor(c);
  if (within) (c.schedule.querySelector(`[data-focus-key="${key}"]`) || c.ed.status).focus();
  if (!r.body.schedule) c.ed.status.textContent = "This thermostat has sent no schedule yet: add setpoints and save to give it one.";
  return true;
}

function buildEditor(c) {
  const ed = c.ed, d = c.data, s = c.serial;
  const modes = allowedModes(d);
  const options = modes.includes(ed.model.mode) ? modes : [ed.model.mode, ...modes];
  ed.modeSelect = el("select", { id: "schedule-mode-" + s, "data-focus-key": "mode", onchange: (ev) => changeMode(c, ev.target.value) },
    ...options.map((m) => el("option", modes.includes(m) ? { value: m } : { value: m, disabled: "" },
      SCHEDULE_MODES[m] + (modes.includes(m) ? "" : " (this thermostat cannot)"))));
  ed.modeSelect.value = ed.model.mode;
  ed.week = el("div", { class: "days" });
  ed.banner = el("div", { class: "banner", role: "alert", hidden: "" });
  ed.message = el("div", { class: "error", id: "schedule-error-" + s, role: "alert" });
  ed.status = el("p", { class: "note", id: "schedule-status-" + s, role: "status", tabindex: "-1" });
  ed.save = el("button", { type: "button", class: "primary", id: "schedule-save-" + s, "data-focus-key": "save",
    onclick: () => saveSchedule(c) }, "Save schedule");
  ed.discard = el("button", { type: "button", id: "schedule-discard-" + s, "data-focus-key": "discard",
    onclick: () => discardSchedule(c) }, "Discard changes");
  const lim = ed.limits;
  c.schedule.replaceChildren(
    el("p", { class: "note" }, `Temperatures in ${unit(d)}, from ${show(lowest(lim), d)} to ${show(highest(lim), d)}. Times are 24-hour (07:30, or 0730); the ↑ and ↓ keys step by 15 minutes.`),
    el("div", { class: "controls" }, el("label", { for: ed.modeSelect.id }, "Schedule mode"), ed.modeSelect),
    ed.banner, ed.week, ed.message,
    el("div", { class: "controls" }, ed.save, ed.discard),
    ed.status);
  labelEditor(c);
  renderWeek(c);
}

// Names that carry the thermostat's name: set again when it is renamed.
function labelEditor(c) {
  const ed = c.ed;
  if (!ed || !ed.save) return;
  if (ed.labelled && ed.labelled !== nameOf(c)) renderWeek(c);
  setAttr(ed.modeSelect, "aria-label", "Schedule mode of " + nameOf(c));
  setAttr(ed.save, "aria-label", "Save the schedule of " + nameOf(c));
  setAttr(ed.discard, "aria-label", "Discard changes to the schedule of " + nameOf(c));
}

function renderWeek(c) {
  const ed = c.ed;
  carryOver(ed.model);
  // Focus comes back to the same control only if it was in this editor.
  const active = document.activeElement;
  const focused = active && ed.week.contains(active) ? active.dataset.focusKey : null;
  ed.week.replaceChildren(...ed.model.days.map((_, i) => renderDay(c, i)));
  ed.labelled = nameOf(c);
  if (ed.listed) markInvalid(c, scheduleProblems(c));
  if (focused) {
    const again = ed.week.querySelector(`[data-focus-key="${focused}"]`);
    if (again) again.focus();
  }
}

function renderDay(c, i) {
  const ed = c.ed, d = c.data, day = DAYS[i], name = nameOf(c);
  const entries = ed.model.days[i];
  entries.sort(inOrder);
  const list = el("ul", { class: "entries" });
  for (const entry of entries) list.append(entry.carried ? carriedRow(c, i, entry) : entryRow(c, i, entry));
  if (!entries.some((x) => !x.carried)) list.append(el("li", { class: "empty" }, "No setpoints"));
  const head = `day-${c.serial}-${i}`;
  const add = el("button", { type: "button", "data-focus-key": "add-" + i, "aria-label": `Add a setpoint on ${day} to ${name}`,
    onclick: () => addEntry(c, i) }, "Add");
  const toggle = el("button", { type: "button", "data-focus-key": "copy-" + i, "aria-expanded": "false",
    "aria-label": `Copy ${day} of ${name} to other days` }, "Copy to…");
  const panel = copyPanel(c, i, toggle);
  toggle.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) panel.querySelector("input").focus();
  });
  return el("section", { class: "day", "aria-labelledby": head, "data-day": String(i) },
    el("h4", { id: head }, day), list, el("div", { class: "controls" }, add, toggle), panel);
}

function carriedRow(c, i, entry) {
  const e = entry.e, d = c.data;
  const temp = e.type === "RANGE" ? `${show(e["temp-min"], d)}–${show(e["temp-max"], d)}` : show(e.temp, d);
  return el("li", { class: "carried", "data-entry": String(entry.id) }, `00:00 ${temp}, carried over from ${DAYS[(i + 6) % 7]}`);
}

function entryRow(c, i, entry) {
  const d = c.data, e = entry.e, day = DAYS[i];
  // A spin button a screen reader announces as such (its value as a time), that can be typed in.
  const time = el("input", { type: "text", role: "spinbutton", "aria-valuemin": "0", "aria-valuemax": "1439", class: "time", inputmode: "numeric", pattern: "([01]?[0-9]|2[0-3])(:?[0-5][0-9])?",
    maxlength: "5", size: "5", placeholder: "HH:MM", autocomplete: "off", spellcheck: "false", required: "",
    "data-focus-key": "time-" + entry.id, "data-entry": String(entry.id) });
  time.value = entry.raw.time ?? hhmm(e.time);
  const fields = e.type === "RANGE" ? [["temp-min", "Heat-to temperature"], ["temp-max", "Cool-to temperature"]] : [["temp", "Temperature"]];
  const temps = fields.map(([field, what]) => {
    const input = el("input", { type: "number", step: isF(d) ? "1" : "0.5", inputmode: "decimal",
      "data-focus-key": field + "-" + entry.id, "data-field": field });
    input.value = entry.raw[field] ?? (typeof e[field] === "number" ? inputValue(e[field], d) : "");
    input.addEventListener("input", () => {
      entry.raw[field] = input.value;
      const v = parseFloat(input.value);
      if (Number.isFinite(v)) e[field] = half(fromScale(v, d));
      touched(c);
    });
    input.addEventListener("change", () => {
      if (Number.isFinite(parseFloat(input.value))) { delete entry.raw[field]; input.value = inputValue(e[field], d); }
    });
    return { input, what };
  });
  // "×", named in full for screen readers: a row of setpoints fits a phone's width.
  const remove = el("button", { type: "button", class: "remove", "data-focus-key": "remove-" + entry.id,
    title: "Remove", onclick: () => removeEntry(c, i, entry) }, "×");
  const label = () => {
    const t = parseTime(time.value);
    if (t === null) { time.removeAttribute("aria-valuenow"); time.removeAttribute("aria-valuetext"); }
    else { time.setAttribute("aria-valuenow", String(t / 60)); time.setAttribute("aria-valuetext", hhmm(t)); }
    time.setAttribute("aria-label", t === null ? `Time of a setpoint on ${day}, as HH:MM` : `Time of the ${hhmm(t)} setpoint on ${day}`);
    const at = t === null ? "a setpoint with no time" : hhmm(t);
    for (const { input, what } of temps) input.setAttribute("aria-label", `${what} at ${at} on ${day}, ${unit(d)}`);
    remove.setAttribute("aria-label", `Remove ${at} on ${day} from ${nameOf(c)}`);
  };
  const setTime = (t) => {
    if (t === null) entry.raw.time = time.value;
    else { e.time = t; delete entry.raw.time; }
    label();
    touched(c);
  };
  time.addEventListener("input", () => setTime(parseTime(time.value)));
  // Once the time is entered (Enter, Tab, a click elsewhere), it is written out in full and
  // the day is put back in order.
  time.addEventListener("change", () => {
    if (parseTime(time.value) === null) return;
    time.value = hhmm(e.time);
    resortDay(c, i);
  });
  time.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowUp" && ev.key !== "ArrowDown") return;
    ev.preventDefault();
    const now = parseTime(time.value) ?? e.time;
    const next = ev.key === "ArrowUp" ? Math.floor(now / 900) * 900 + 900 : Math.ceil(now / 900) * 900 - 900;
    time.value = hhmm((next + 86400) % 86400);
    setTime(parseTime(time.value));
    resortDay(c, i);
  });
  label();
  entry.inputs = { time };
  for (const { input } of temps) entry.inputs[input.dataset.field] = input;
  const parts = [time];
  temps.forEach(({ input }, k) => { if (k) parts.push(el("span", { "aria-hidden": "true" }, "–")); parts.push(input); });
  return el("li", { class: "entry", "data-entry": String(entry.id) }, ...parts, el("span", {}, unit(d)), remove);
}

// Puts a day's rows in order after a time changed, moving every row but the one being edited
// (a focused element that is moved loses the focus, and the person their place).
function resortDay(c, i) {
  const entries = c.ed.model.days[i].sort(inOrder);
  const list = c.ed.week.querySelector(`section[data-day="${i}"] .entries`);
  if (!list) return;
  const rows = new Map([...list.children].map((li) => [li.dataset.entry, li]));
  const order = entries.map((x) => rows.get(String(x.id))).filter(Boolean);
  const here = order.find((li) => li.contains(document.activeElement));
  if (!here) { list.append(...order); return; }
  const k = order.indexOf(here);
  here.before(...order.slice(0, k));
  here.after(...order.slice(k + 1));
}

function copyPanel(c, i, toggle) {
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
  const copy = el("button", { type: "button", "aria-label": `Copy ${day} to the chosen days`, onclick: () => {
    const targets = boxes.filter((b) => b.checked).map((b) => +b.value);
    if (!targets.length) { note.textContent = "Choose at least one day."; return; }
    const source = c.ed.model.days[i].filter((x) => !x.carried);
    for (const j of targets) {
      const carried = c.ed.model.days[j].filter((x) => x.carried);
      c.ed.model.days[j] = carried.concat(source.map((x) => ({ id: ++entryIds, e: { ...x.e }, raw: {}, carried: false })));
    }
    touched(c);
    renderWeek(c);
    c.ed.status.textContent = `Copied ${day} to ${targets.map((j) => DAYS[j]).join(", ")}. Save to send it to the thermostat.`;
    const back = c.ed.week.querySelector(`[data-focus-key="copy-${i}"]`);
    if (back) back.focus();
  } }, "Copy");
  panel.append(el("div", { class: "controls" }, copy), note);
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

function addEntry(c, i) {
  const ed = c.ed, lim = ed.limits, mode = ed.model.mode;
  const setpoints = ed.model.days[i].filter((x) => !x.carried);
  const last = setpoints[setpoints.length - 1];
  const taken = new Set(setpoints.map((x) => x.e.time));
  let time = last ? Math.ceil((last.e.time + 3600) / 900) * 900 : 6 * 3600;
  if (time > 86400 - 900) time = 6 * 3600;
  while (taken.has(time) && time < 86400 - 900) time += 900;
  const e = { time, type: mode, entry_type: "setpoint" };
  const was = (f) => (last && typeof last.e[f] === "number" ? last.e[f] : null);
  if (mode === "RANGE") {
    e["temp-min"] = was("temp-min") ?? within(20, lim);
    e["temp-max"] = was("temp-max") ?? within(24, lim);
  } else {
    e.temp = was("temp") ?? within(mode === "COOL" ? 24 : 20, lim);
  }
  const entry = { id: ++entryIds, e, raw: {}, carried: false };
  ed.model.days[i].push(entry);
  touched(c);
  renderWeek(c);
  ed.week.querySelector(`[data-focus-key="time-${entry.id}"]`).focus();
}

function removeEntry(c, i, entry) {
  const ed = c.ed;
  ed.model.days[i] = ed.model.days[i].filter((x) => x !== entry);
  touched(c);
  renderWeek(c);
  ed.status.textContent = `Removed ${hhmm(entry.e.time)} on ${DAYS[i]}.`;
  ed.week.querySelector(`[data-focus-key="add-${i}"]`).focus();
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
    entry.raw = {};
  }
  ed.model.mode = mode;
  touched(c);
  renderWeek(c);
  ed.status.textContent = `Every setpoint is now ${SCHEDULE_MODES[mode]}: check the temperatures, then save.`;
}

// What is wrong with the edit, each with the input to fix, in the order shown.
function scheduleProblems(c) {
  const ed = c.ed, d = c.data, lim = ed.limits, out = [];
  ed.model.days.forEach((entries, i) => {
    const day = DAYS[i], seen = new Set();
    for (const entry of entries) {
      if (entry.carried) continue;
      const e = entry.e;
      if (entry.raw.time !== undefined) {
        const typed = entry.raw.time.trim();
        out.push({ entry, field: "time", text: typed
          ? `${day}: "${typed}" is not a time; enter one from 00:00 to 23:59, such as 07:30.`
          : `${day}: a setpoint has no time; enter one from 00:00 to 23:59.` });
        continue;
      }
      const at = hhmm(e.time);
      if (seen.has(e.time)) out.push({ entry, field: "time", text: `${day}: two setpoints at ${at}; change or remove one.` });
      seen.add(e.time);
      let ok = true;
      for (const field of e.type === "RANGE" ? ["temp-min", "temp-max"] : ["temp"]) {
        const raw = entry.raw[field];
        if ((raw !== undefined && !Number.isFinite(parseFloat(raw))) || typeof e[field] !== "number") {
          out.push({ entry, field, text: `${day} ${at}: enter a temperature.` });
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
  for (const input of c.ed.week.querySelectorAll("input[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    input.removeAttribute("aria-describedby");
  }
  for (const p of problems) {
    const input = p.entry.inputs && p.entry.inputs[p.field];
    if (!input) continue;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", c.ed.message.id);
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
    const first = problems[0].entry.inputs && problems[0].entry.inputs[problems[0].field];
    if (first) first.focus();
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
      c.ed.status.textContent = modeOk ? "Saved, and sent to the thermostat."
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
