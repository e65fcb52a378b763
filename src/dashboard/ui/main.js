"use strict";
let started = false;
async function start() {
  if (!started) {
    started = true;
    // The stream first: it loads the cards whenever it connects, so a server that is down when
    // the page opens is picked up when it comes back.
    live();
    // Availability and "last seen" change without events; the chart gains a sample every few minutes.
    setInterval(() => loadDevices().catch(() => {}), 30000);
    setInterval(() => { for (const c of cards.values()) loadHistory(c).catch(() => {}); }, 120000);
  }
  try {
    await loadConfig();
    await loadDevices();
  } catch (e) { /* the stream retries */ }
}
start();
