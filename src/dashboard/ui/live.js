"use strict";
// ---- live: /api/events, read with fetch so an API key can be sent; reconnects with backoff ----
// With ?alerts=1 it also carries an `alert` event when an alert starts or clears (alerts.js).
function setLive(on, text) {
  const live = document.getElementById("live");
  live.classList.toggle("on", on);
  live.textContent = text;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The server sends a keep-alive every 15 s; this long with nothing means the connection is gone
// even if it was never closed (a laptop asleep, a router that forgot it).
const SILENCE_MS = 45000;
async function live() {
  let delay = 1000;
  for (;;) {
    const abort = new AbortController();
    let watchdog = setTimeout(() => abort.abort(), SILENCE_MS);
    try {
      const res = await fetch(rel("api/events?alerts=1"), { headers: headers(false), cache: "no-store", signal: abort.signal });
      if (res.status === 401) needKey();
      if (!res.ok || !res.body) throw new Error("HTTP " + res.status);
      setLive(true, "Live");
      delay = 1000;
      // Once per connection: the list (and the settings, if the page started without them),
      // then the alerts, which name the thermostats the list brings.
      (Object.keys(config).length ? Promise.resolve() : loadConfig()).catch(() => {})
        .then(() => loadDevices()).catch(() => {}).then(() => loadAlerts());
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        clearTimeout(watchdog);
        watchdog = setTimeout(() => abort.abort(), SILENCE_MS);
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split("\n");
          // A named `alert` event only says the alerts changed: read them again.
          if (lines.includes("event: alert")) { loadAlerts(); continue; }
          for (const line of lines) if (line.startsWith("data:")) onEvent(line.slice(5).trim());
        }
      }
    } catch (e) { /* fall through to the reconnect */ }
    clearTimeout(watchdog);
    abort.abort();
    setLive(false, "Reconnecting…");
    await sleep(delay);
    delay = Math.min(delay * 2, 30000);
  }
}

const historyDue = new Map();
const AWAY_FIELDS = ["away", "auto_away", "manual_eco_all"];
function onEvent(text) {
  let ev;
  try { ev = JSON.parse(text); } catch (e) { return; }
  if (!ev.serial) return;
  // Home or away changed (by hand, or by who is home): the home's line says why.
  if (ev.origin === "presence" || (ev.changed || []).some((f) => AWAY_FIELDS.includes(f))) peoplePanel.reloadSoon();
  if (!cards.has(ev.serial) || ev.deleted) {
    // The list being loaded may already hold it: ask again only if it does not.
    if (devicesLoading && !ev.deleted) devicesLoading.then(() => { if (!cards.has(ev.serial)) devicesSoon(); });
    else devicesSoon();
    return;
  }
  if (ev.object_key === "schedule." + ev.serial) scheduleChanged(cards.get(ev.serial), ev.revision);
  refreshOne(ev.serial);
  // A change of HVAC state adds a history sample: redraw the chart soon after.
  if ((ev.changed || []).some((f) => f.startsWith("hvac_")) && !historyDue.has(ev.serial)) {
    historyDue.set(ev.serial, setTimeout(() => {
      historyDue.delete(ev.serial);
      const c = cards.get(ev.serial);
      if (c) loadHistory(c).catch(() => {});
    }, 1500));
  }
}
