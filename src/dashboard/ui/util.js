"use strict";
const DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MODE_NAMES = { off: "Off", heat: "Heat", cool: "Cool", range: "Heat · Cool", emergency: "Emergency heat" };
const HEAT_FLAGS = ["heater", "heat_x2", "heat_x3", "aux_heat", "emer_heat", "alt_heat"];
const COOL_FLAGS = ["ac", "cool_x2", "cool_x3"];
const cards = new Map();

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

// Temperatures: stored and sent in Celsius, shown in the thermostat's own scale.
const isF = (d) => d.temperature_scale === "F";
function show(c, d) {
  if (typeof c !== "number") return "–";
  return isF(d) ? Math.round(c * 9 / 5 + 32) + "°F" : c.toFixed(1) + "°C";
}
function stepped(c, d, dir) {
  if (isF(d)) {
    const f = Math.round(c * 9 / 5 + 32) + dir;
    return Math.round((f - 32) * 5 / 9 * 100) / 100;
  }
  // To the next half degree in that direction: 20.8 goes up to 21.0 and down to 20.5.
  return dir > 0 ? Math.floor(c * 2 + 1e-9) / 2 + 0.5 : Math.ceil(c * 2 - 1e-9) / 2 - 0.5;
}
function ago(iso) {
  if (!iso) return "never";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 90) return "just now";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  if (s < 129600) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " days ago";
}
function duration(secs) {
  const m = Math.round(secs / 60);
  return m >= 60 ? Math.floor(m / 60) + " h " + (m % 60) + " min" : m + " min";
}

// Writes text only when it changes, so live regions are not re-announced on every refresh.
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
function setAttr(node, name, value) { if (node.getAttribute(name) !== value) node.setAttribute(name, value); }
// Temperatures in the thermostat's scale, the 0.5 °C grid, times of day.
const half = (c) => Math.round(c * 2) / 2;
const toScale = (c, d) => (isF(d) ? c * 9 / 5 + 32 : c);
const fromScale = (v, d) => (isF(d) ? (v - 32) * 5 / 9 : v);
const inputValue = (c, d) => (isF(d) ? String(Math.round(toScale(c, d))) : String(Math.round(c * 10) / 10));
const unit = (d) => (isF(d) ? "°F" : "°C");
const nameOf = (c) => c.data.name || c.serial;
// A time of day in the browser's own format ("22:00", "10:00 PM"), for an ISO time or a Date:
// the one clock format of the page.
function clockTime(t) {
  const d = t instanceof Date ? t : new Date(t);
  return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
}
// An hour on an axis, in the same format: "4 PM", "16 Uhr", "16".
function clockHour(d) {
  return d.toLocaleTimeString([], { hour: "numeric" });
}
// A moment as people say it from `now`: "10:02 PM" the same day, "tomorrow 7:00 AM", "Tue
// 10:02 PM" within the week either way, "3 Nov, 10:02 PM" further.
function whenWords(t, now) {
  if (isNaN(t)) return "";
  const time = clockTime(t);
  const days = Math.round((new Date(t.toDateString()) - new Date(now.toDateString())) / 86400000);
  if (days === 0) return time;
  if (days === 1) return "tomorrow " + time;
  if (Math.abs(days) < 7) return t.toLocaleDateString([], { weekday: "short" }) + " " + time;
  return t.toLocaleDateString([], { day: "numeric", month: "short" }) + ", " + time;
}
// A day as people say it from `now` (a local "YYYY-MM-DD" or a Date): "today", "tomorrow",
// "Sunday" within the week ahead, "Sun 6 Dec" further or before.
function dayWords(day, now) {
  const d = day instanceof Date ? day : new Date(day + "T00:00");
  if (isNaN(d)) return "";
  const days = Math.round((new Date(d.toDateString()) - new Date(now.toDateString())) / 86400000);
  if (days === 0) return "today";
  if (days === 1) return "tomorrow";
  if (days > 1 && days < 7) return d.toLocaleDateString([], { weekday: "long" });
  return d.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" });
}
// The lowest and highest setpoints on the 0.5 °C grid within the editor's limits.
const lowest = (lim) => Math.ceil(lim.low * 2 - 1e-9) / 2;
const highest = (lim) => Math.floor(lim.high * 2 + 1e-9) / 2;
const within = (c, lim) => Math.min(highest(lim), Math.max(lowest(lim), half(c)));
// A write; a refusal is said in `out`, and null returned.
async function change(method, path, payload, out) {
  out.className = "note result";
  out.textContent = "";
  const r = await callJSON(method, path, payload)
    .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
  if (r.ok) return r.body;
  out.className = "error result";
  out.textContent = r.status === 401 ? "Refused: this server wants an API key that can write (see API key above)."
    : r.body.error || r.body.message || "Failed (HTTP " + r.status + ")";
  return null;
}
// Copies the field `id` (the clipboard API needs https; the older way works on plain http).
async function copyField(id, saidId, what) {
  const input = document.getElementById(id);
  let copied = false;
  try { await navigator.clipboard.writeText(input.value); copied = true; } catch (e) { /* the older way */ }
  if (!copied) {
    input.focus();
    input.select();
    try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
  }
  document.getElementById(saidId).textContent = copied ? "Copied." : `Select the ${what} and copy it.`;
}
// A deletion asked twice in the row: `button` makes way for the question, `yes` sends DELETE
// `path`, then `done(answer)`; Cancel or a refusal brings `button` back. `asking(button or null)`.
function deleteAsked(row, button, question, yes, path, out, done, asking = () => {}) {
  button.addEventListener("click", () => {
    const box = el("div", { class: "confirm", role: "group", "aria-label": question });
    const ok = el("button", { type: "button", class: "danger" }, yes);
    const keep = el("button", { type: "button" }, "Cancel");
    box.append(el("p", {}, question), el("div", { class: "controls" }, ok, keep));
    button.hidden = true;
    asking(button);
    row.append(box);
    const close = () => { box.remove(); asking(null); };
    const back = () => { close(); button.hidden = false; button.focus(); };
    keep.addEventListener("click", back);
    ok.addEventListener("click", async () => {
      ok.disabled = true;
      const answer = await change("DELETE", path, undefined, out);
      if (!answer) return back();
      close();
      await done(answer);
    });
    ok.focus();
  });
}
