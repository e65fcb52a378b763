"use strict";
// ---- Apple Home: the setup code and its QR code until a controller pairs, then how many have ----
const homekitPanel = document.getElementById("homekit");

async function loadHomekit() {
  const r = await getJSON("api/homekit");
  // Off, or a key that may not read the code: no panel.
  if (!r.ok || !r.body.enabled) { homekitPanel.hidden = true; return; }
  const h = r.body;
  homekitPanel.hidden = false;
  const paired = h.paired;
  document.getElementById("homekit-unpaired").hidden = paired;
  document.getElementById("homekit-paired").hidden = !paired;
  const controllers = h.pairings === 1 ? "1 controller" : `${h.pairings} controllers`;
  document.getElementById("homekit-state").textContent = paired ? `(paired with ${controllers})` : "(not paired)";
  document.getElementById("homekit-paired-text").textContent =
    `${h.name} is in the Home app: paired with ${controllers}. Each thermostat shows up there as its own accessory.`;
  document.getElementById("homekit-code").textContent = paired ? "" : h.setup_code || "";
  const qr = document.getElementById("homekit-qr");
  const src = !paired && h.qr_svg ? "data:image/svg+xml;charset=utf-8," + encodeURIComponent(h.qr_svg) : "";
  if ((qr.getAttribute("src") || "") !== src) {
    if (src) qr.src = src; else qr.removeAttribute("src");
  }
}

// Opening the panel looks again: the phone may have paired since the page loaded.
homekitPanel.addEventListener("toggle", () => { if (homekitPanel.open) loadHomekit().catch(() => {}); });
