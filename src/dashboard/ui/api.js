"use strict";
// Everything is fetched relative to the page, so hearth works under a path prefix (a reverse
// proxy, Home Assistant ingress). X-Ingress-Path, when sent, is the prefix itself.
const ingress = document.body.dataset.ingressPath || "";
const BASE = ingress ? ingress.replace(/\/+$/, "") + "/" : "";
const rel = (path) => BASE + path;

// The API key the page was given (CONTROL_REQUIRE_KEY), asked once and kept in this browser.
// Under ingress the origin is Home Assistant's, shared with its add-ons (and the proxy needs no
// key): there it is kept for this tab only.
const keyStore = ingress ? sessionStorage : localStorage;
let apiKey = keyStore.getItem("hearth-key") || "";

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  if (apiKey) h["X-API-Key"] = apiKey;
  return h;
}

async function getJSON(path) {
  const res = await fetch(rel(path), { headers: headers(false), cache: "no-store" });
  if (res.status === 401) needKey();
  const body = await res.json().catch(() => ({}));
  return { ok: res.ok, status: res.status, body };
}

async function callJSON(method, path, payload) {
  const res = await fetch(rel(path), { method, headers: headers(true), body: JSON.stringify(payload) });
  const body = await res.json().catch(() => ({}));
  // A thermostat asking for its own key (configure-nest) is not this server asking for one.
  if (res.status === 401 && !body.auth_required) needKey();
  return { ok: res.ok, status: res.status, body };
}
const postJSON = (path, payload) => callJSON("POST", path, payload);

function needKey() {
  const panel = document.getElementById("key-panel");
  if (!panel.hidden) return;
  panel.hidden = false;
  document.getElementById("key-input").focus();
}

document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  apiKey = document.getElementById("key-input").value.trim();
  keyStore.setItem("hearth-key", apiKey);
  document.getElementById("key-panel").hidden = true;
  start();
});
