"use strict";
let started = false;
async function start() {
  try { await loadConfig(); } catch (e) { /* the stream asks again when it connects */ }
  loadHomekit().catch(() => {});
  loadPeople().catch(() => {});
  if (started) {
    // Again after an API key was entered: the stream may be waiting to reconnect.
    await loadDevices().catch(() => {});
    return;
  }
  started = true;
  // The stream loads the cards whenever it connects (once on load, not here as well), so a
  // server that is down when the page opens is picked up when it comes back.
  live();
  // Availability and "last seen" change without events; the chart gains a sample every few minutes.
  // The alerts too, in case the stream missed one of their events; and who is home, which a
  // report from a phone changes without any event.
  setInterval(() => { loadDevices().catch(() => {}).then(() => loadAlerts()); loadPeople().catch(() => {}); }, 30000);
  setInterval(() => { for (const c of cards.values()) loadHistory(c).catch(() => {}); }, 120000);
}
start();
