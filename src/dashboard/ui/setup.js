"use strict";
// ---- adding thermostats: the address to use, a network scan, pointing, waiting ones ----
let config = {};
async function loadConfig() {
  const r = await getJSON("api/config");
  if (!r.ok) return;
  config = r.body;
  document.getElementById("register-url").value = config.cloudregisterurl || "";
  // Said plainly when no thermostat could reach that address (the server decides).
  const warning = document.getElementById("register-url-warning");
  warning.textContent = config.cloudregisterurl_warning || "";
  warning.hidden = !config.cloudregisterurl_warning;
  document.getElementById("pairing").hidden = !config.require_device_pairing;
}

document.getElementById("copy-url").addEventListener("click", () =>
  copyField("register-url", "copy-result", "address"));

document.getElementById("scan-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const button = document.getElementById("scan-button");
  const status = document.getElementById("scan-status");
  const list = document.getElementById("scan-results");
  const subnet = document.getElementById("scan-subnet").value.trim();
  button.disabled = true;
  list.setAttribute("aria-busy", "true");
  status.className = "note";
  status.textContent = `Scanning ${subnet || "this server's network"}… this takes about 10 seconds.`;
  const r = await postJSON("api/scan-network", subnet ? { subnet } : {})
    .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
  button.disabled = false;
  list.removeAttribute("aria-busy");
  if (!r.ok) {
    status.className = "error";
    status.textContent = r.body.error || r.body.message || "The scan failed (HTTP " + r.status + ")";
    return;
  }
  const found = r.body.devices || [];
  status.textContent = found.length
    ? `${found.length} thermostat${found.length === 1 ? "" : "s"} found in ${r.body.subnet}.`
    : `No thermostat answered in ${r.body.subnet}. Is it on, on this network, and running No Longer Evil firmware?`;
  list.replaceChildren(...found.map(scanRow));
});

function scanRow(t) {
  const who = t.device_name || t.serial || "A thermostat hearth has not met yet";
  const where = el("span", { class: "grow" }, el("strong", {}, t.ip), " · " + who + (t.serial && t.device_name !== t.serial ? ` (${t.serial})` : ""));
  const state = el("span", { class: t.configured ? "ok-text" : "note" },
    t.configured ? "Points here" : "Points elsewhere: " + (t.cloudregisterurl || "no address set"));
  const result = el("p", { class: "note result", role: "status" });
  const point = el("button", { type: "button", class: t.configured ? "" : "primary", "aria-label": `Point ${t.ip} here` }, "Point here");
  const row = el("li", { "data-ip": t.ip }, where, state, point, result);
  point.addEventListener("click", () => pointHere(t, row, point, state, result, null));
  return row;
}

async function pointHere(t, row, button, state, result, apiKey) {
  button.disabled = true;
  result.className = "note result";
  result.textContent = `Pointing ${t.ip} at hearth…`;
  const body = apiKey ? { ip: t.ip, api_key: apiKey } : { ip: t.ip };
  const r = await postJSON("api/configure-nest", body)
    .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
  button.disabled = false;
  if (r.ok && r.body.success) {
    state.className = "ok-text";
    state.textContent = "Points here";
    result.textContent = `${r.body.device_name || t.ip} now registers at ${r.body.cloudregisterurl}. It appears here within a minute.`;
    const form = row.querySelector("form");
    if (form) { form.remove(); result.tabIndex = -1; result.focus(); }
    return;
  }
  result.className = "error result";
  result.textContent = r.body.error || r.body.message || "Pointing failed (HTTP " + r.status + ")";
  if (r.body.auth_required && !row.querySelector("form")) row.append(keyForm(t, row, button, state, result));
}

// The thermostat wants its API key (it has been on for over 30 minutes): ask for it here.
function keyForm(t, row, button, state, result) {
  const input = el("input", { type: "password", id: "thermostat-key-" + t.ip.replace(/\./g, "-"), autocomplete: "off", spellcheck: "false" });
  const go = el("button", { type: "submit", class: "primary", "aria-label": `Point ${t.ip} here with this key` }, "Point here with this key");
  const form = el("form", { novalidate: "", class: "controls result" },
    el("label", { for: input.id }, `API key of the thermostat at ${t.ip}`), input, go);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!input.value.trim()) { result.className = "error result"; result.textContent = "Enter the thermostat's API key."; input.focus(); return; }
    pointHere(t, row, go, state, result, input.value.trim());
  });
  setTimeout(() => input.focus(), 0);
  return form;
}

// Thermostats the server knows that nobody has added: removed ones that came back, and in
// pairing mode every unclaimed one.
async function loadWaiting() {
  const r = await getJSON("api/waiting");
  const section = document.getElementById("waiting-section");
  const list = document.getElementById("waiting");
  const waiting = (r.ok && r.body.devices) || [];
  section.hidden = waiting.length === 0;
  const key = JSON.stringify([config.require_device_pairing, waiting.map((w) => [w.serial, w.name, w.is_available])]);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.replaceChildren(...waiting.map((w) => {
    const name = w.name || w.serial;
    const seen = el("span", { class: "grow" }, el("strong", {}, name),
      (w.name ? ` (${w.serial})` : "") + (w.is_available ? " · online" : " · last seen " + ago(w.last_seen)));
    const result = el("p", { class: "note result", role: "status" });
    if (config.require_device_pairing) {
      const claim = el("button", { type: "button", "aria-label": `Enter the entry code of ${name}` }, "Enter its code");
      claim.addEventListener("click", () => {
        document.getElementById("setup").open = true;
        document.getElementById("pairing-code").focus();
      });
      return el("li", {}, seen, el("span", { class: "note" }, "Claim it with the entry code it shows."), claim, result);
    }
    const add = el("button", { type: "button", class: "primary", "aria-label": `Add ${name}` }, "Add");
    add.addEventListener("click", async () => {
      add.disabled = true;
      const a = await postJSON("api/adopt", { serial: w.serial })
        .catch((e) => ({ ok: false, status: 0, body: { message: "hearth did not answer (" + e.message + ")" } }));
      add.disabled = false;
      if (a.ok && a.body.success !== false) {
        document.getElementById("notice").textContent = `${name} was added.`;
        list.dataset.key = "";
        loadDevices().catch(() => {});
      } else {
        result.className = "error result";
        result.textContent = a.body.message || a.body.error || "Could not add it (HTTP " + a.status + ")";
      }
    });
    return el("li", {}, seen, add, result);
  }));
}

// ---- pairing and keys ----
document.getElementById("pairing-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("pairing-code");
  const result = document.getElementById("pairing-result");
  const code = input.value.replace(/[\s-]/g, "").toUpperCase();
  if (!/^[A-Z0-9]{7}$/.test(code)) {
    result.className = "error";
    result.textContent = "An entry code is 7 letters and digits, like ABC-1234.";
    return;
  }
  result.className = "note";
  result.textContent = "Claiming…";
  const r = await postJSON("api/register", { code, userId: "owner" }).catch((err) => ({ ok: false, body: { message: err.message } }));
  if (r.ok && r.body.success) {
    result.textContent = `Added thermostat ${r.body.serial}.`;
    input.value = "";
    devicesSoon();
  } else {
    result.className = "error";
    result.textContent = r.body.message || r.body.error || "The code was not accepted.";
  }
});
