"use strict";
// ---- alerts: a banner per active alert above the cards, the recent ones (closed) below them ----
// GET /api/alerts is the truth: read on each connection of the event stream and with the page's
// periodic refresh; in between, the stream's `alert` events (live.js, /api/events?alerts=1) say
// when to read it again, so an alert that starts with no change of any thermostat (offline)
// shows at once.
const ALERT_TITLES = {
  low_temperature: "Too cold", high_temperature: "Too hot", offline: "Thermostat offline",
  not_heating: "Not heating", not_cooling: "Not cooling", filter: "Filter due",
  low_battery: "Battery low", safety_shutoff: "Safety shut-off",
  not_applied: "Change not taken",
};
// What threatens the house or the equipment stands out (as ntfy's high priority does).
const SAFETY_KINDS = ["low_temperature", "high_temperature", "not_heating", "not_cooling", "safety_shutoff"];
const alertBanners = new Map();
let alertsLoading = null;
let alertsAgain = false;

function loadAlerts() {
  // One read at a time; a notice during one asks for one more after it.
  if (alertsLoading) { alertsAgain = true; return alertsLoading; }
  alertsLoading = getJSON("api/alerts")
    .then((r) => { if (r.ok) showAlerts(r.body.active || [], r.body.recent || []); })
    .catch(() => {})
    .finally(() => {
      alertsLoading = null;
      if (alertsAgain) { alertsAgain = false; loadAlerts(); }
    });
  return alertsLoading;
}

const alertTitle = (a) => ALERT_TITLES[a.kind] || a.kind;
function alertPlace(a) {
  const c = cards.get(a.serial);
  return c ? nameOf(c) : a.serial;
}
const alertTime = (iso) => whenWords(new Date(iso), new Date());

function buildBanner(a) {
  const safety = SAFETY_KINDS.includes(a.kind);
  const b = { id: a.id };
  b.what = el("strong", { class: "what", id: "alert-what-" + a.id });
  b.words = el("p", { class: "words" });
  b.since = el("span", { class: "since" });
  b.error = el("p", { class: "error", role: "alert" });
  b.root = el("div", { class: "alert" + (safety ? " safety" : ""), "data-kind": a.kind, "data-id": a.id,
    role: "group", "aria-labelledby": b.what.id },
  el("span", { class: "sign", "aria-hidden": "true" }, safety ? "!" : "i"),
  safety ? el("span", { class: "sr" }, "Urgent: ") : null, b.what, b.since);
  if (a.kind === "filter") {
    b.ack = el("button", { type: "button", onclick: () => filterChanged(b) }, "Filter changed");
    b.root.append(b.ack);
  }
  b.root.append(b.words, b.error);
  return b;
}

function updateBanner(b, a) {
  const place = alertPlace(a);
  setText(b.what, alertTitle(a) + " · " + place);
  setText(b.words, a.message);
  setText(b.since, "since " + alertTime(a.started_at));
  if (b.ack) setAttr(b.ack, "aria-label", "Filter changed on " + place + ": reset its filter reminder");
}

// The filter was changed: the alert is acknowledged, which resets the filter hours and clears it.
async function filterChanged(b) {
  b.ack.disabled = true;
  setText(b.error, "");
  try {
    const r = await postJSON("api/alerts/ack", { id: b.id });
    if (!r.ok) setText(b.error, r.body.error || r.body.message || "Not acknowledged (HTTP " + r.status + ")");
  } catch (e) {
    setText(b.error, "The server did not answer: try again.");
  }
  b.ack.disabled = false;
  loadAlerts();
}

function showAlerts(active, recent) {
  lateSerials.clear();
  for (const a of active) if (a.kind === "not_applied") lateSerials.add(a.serial);
  for (const c of cards.values()) updateTaken(c, c.data);
  const list = document.getElementById("alerts");
  const ids = new Set(active.map((a) => a.id));
  for (const [id, b] of alertBanners) if (!ids.has(id)) { b.root.remove(); alertBanners.delete(id); }
  // The safety kinds first, then the rest, each oldest first (as the server lists them).
  const ordered = active.filter((a) => SAFETY_KINDS.includes(a.kind))
    .concat(active.filter((a) => !SAFETY_KINDS.includes(a.kind)));
  for (const a of ordered) {
    let b = alertBanners.get(a.id);
    if (!b) { b = buildBanner(a); alertBanners.set(a.id, b); list.append(b.root); }
    updateBanner(b, a);
  }
  // Moved only when out of order, so a banner already there is not announced again.
  const roots = ordered.map((a) => alertBanners.get(a.id).root);
  if (roots.some((r, i) => list.children[i] !== r)) list.append(...roots);
  const section = document.getElementById("alerts-recent");
  section.hidden = recent.length === 0;
  setText(document.getElementById("alerts-recent-count"), String(recent.length));
  const rows = recent.map((a) => el("li", { "data-kind": a.kind },
    el("span", { class: "grow" }, el("strong", {}, alertTitle(a) + " · " + alertPlace(a)), " — " + a.message),
    el("span", { class: "note" }, alertTime(a.started_at) + " to " + alertTime(a.cleared_at))));
  document.getElementById("alerts-recent-list").replaceChildren(...rows);
}
