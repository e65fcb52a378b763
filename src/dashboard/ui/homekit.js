"use strict";
// ---- Apple Home: the setup code and its QR code until a controller pairs, then how many have;
// or, after too many wrong codes, that pairing is locked and a button to unlock it ----
const homekitPanel = document.getElementById("homekit");
const homekitUnlock = document.getElementById("homekit-unlock");
const homekitResult = document.getElementById("homekit-result");

async function loadHomekit() {
  const r = await getJSON("api/homekit");
  // Off, or a key that may not read the code: no panel.
  if (!r.ok || !r.body.enabled) { homekitPanel.hidden = true; return; }
  showHomekit(r.body);
}

// The panel for an answer of GET /api/homekit (POST /api/homekit/unlock answers the same).
function showHomekit(h) {
  homekitPanel.hidden = false;
  // Said plainly when no phone could reach the bridge (the server decides).
  const warning = document.getElementById("homekit-warning");
  warning.textContent = h.warning || "";
  warning.hidden = !h.warning;
  const paired = h.paired;
  const locked = !paired && h.locked;
  document.getElementById("homekit-unpaired").hidden = paired || locked;
  document.getElementById("homekit-locked").hidden = !locked;
  document.getElementById("homekit-paired").hidden = !paired;
  const controllers = h.pairings === 1 ? "1 controller" : `${h.pairings} controllers`;
  document.getElementById("homekit-state").textContent =
    paired ? `(paired with ${controllers})` : locked ? "(pairing locked)" : "(not paired)";
  document.getElementById("homekit-paired-text").textContent =
    `${h.name} is in the Home app: paired with ${controllers}. Each thermostat shows up there as its own accessory.`;
  document.getElementById("homekit-code").textContent = h.setup_code || "";
  const qr = document.getElementById("homekit-qr");
  const src = h.qr_svg ? "data:image/svg+xml;charset=utf-8," + encodeURIComponent(h.qr_svg) : "";
  if ((qr.getAttribute("src") || "") !== src) {
    if (src) qr.src = src; else qr.removeAttribute("src");
  }
}

// Unlock: a new setup code, shown at once; the focus goes to it, the status line says so.
homekitUnlock.addEventListener("click", async () => {
  homekitUnlock.disabled = true;
  homekitResult.textContent = "";
  try {
    const r = await postJSON("api/homekit/unlock", {});
    if (r.ok) {
      showHomekit(r.body);
      homekitResult.textContent = "Unlocked: pairing works again with the new setup code shown above.";
      const code = document.getElementById("homekit-code");
      code.tabIndex = -1;
      code.focus();
    } else {
      homekitResult.textContent = r.body.error || `Not unlocked (HTTP ${r.status})`;
      // Someone may have unlocked it meanwhile (409): show what is so now.
      loadHomekit().catch(() => {});
    }
  } catch (e) {
    homekitResult.textContent = "Not unlocked: the server did not answer.";
  } finally {
    homekitUnlock.disabled = false;
  }
});

// Opening the panel looks again: the phone may have paired since the page loaded.
homekitPanel.addEventListener("toggle", () => {
  if (homekitPanel.open) { homekitResult.textContent = ""; loadHomekit().catch(() => {}); }
});
