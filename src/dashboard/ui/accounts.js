"use strict";
// ---- keys, users and sharing: /api/keys, /api/users, /api/shares ----
// In a scope of its own: the page's scripts share one global scope, and nothing here is used
// elsewhere.
(() => {
  // Loaded when the panel is opened (and after each change), never on page load. The server
  // answers these only to a caller that may already do everything (see docs/control-api.md);
  // anyone else reads why, in words, at the top of the panel.
  const acct = {
    panel: document.getElementById("accounts"),
    error: document.getElementById("accounts-error"),
    users: [],
  };

  async function loadAccounts() {
    const [k, u, s] = await Promise.all([getJSON("api/keys"), getJSON("api/users"), getJSON("api/shares")]);
    const refused = [k, u, s].find((r) => !r.ok);
    acct.error.textContent = refused ? refusalText(refused) : "";
    document.getElementById("saved-key").hidden = !apiKey;
    document.getElementById("accounts-body").hidden = Boolean(refused);
    if (refused) return;
    acct.users = u.body.users || [];
    renderKeys(k.body.keys || []);
    renderUsers(acct.users);
    renderShares(s.body.shares || []);
    fillChoices();
  }

  function refusalText(r) {
    if (r.status === 401) return "This server wants an API key of the user owner that can write (see API key above).";
    if (r.status === 403) return (r.body.error || "Refused") + ". Keys, users and sharing need a key of owner with the write scope and no thermostat limit.";
    return r.body.error || r.body.message || "hearth did not answer (HTTP " + r.status + ")";
  }

  acct.panel.addEventListener("toggle", () => { if (acct.panel.open) loadAccounts().catch(() => {}); });

  const listed = (done) => { say(done.message); return loadAccounts(); };

  // ---- keys ----
  function renderKeys(keys) {
    const list = document.getElementById("keys-list");
    document.getElementById("keys-none").hidden = keys.length > 0;
    list.replaceChildren(...keys.map((k) => {
      const what = k.scopes.join(" and ") + (k.serials.length ? " · only " + k.serials.join(", ") : "");
      const when = "made " + ago(k.created) + " · " + (k.last_used ? "used " + ago(k.last_used) : "never used") +
        (k.expires ? (k.expired ? " · expired" : " · expires " + k.expires.slice(0, 10)) : "");
      const out = el("p", { class: "note result", role: "status" });
      const revoke = el("button", { type: "button", "aria-label": `Revoke the API key ${k.name} of ${k.user}` }, "Revoke");
      const row = el("li", { "data-key-id": k.id },
        el("span", { class: "grow" }, el("strong", {}, k.name), ` · ${k.user} · ${what}`,
          el("br"), el("span", { class: "note" }, el("code", {}, k.preview), " · " + when)),
        revoke, out);
      deleteAsked(row, revoke, `Revoke ${k.name}? Whatever uses it is refused from now on.`, "Revoke",
        "api/keys/" + encodeURIComponent(k.id), out, listed);
      return row;
    }));
  }

  document.getElementById("key-create").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = document.getElementById("key-create-result");
    const name = document.getElementById("key-name").value.trim();
    const scopes = ["read", "write"].filter((s) => document.getElementById("key-scope-" + s).checked);
    if (!name) { out.className = "error result"; out.textContent = "Give the key a label, to tell it apart later."; document.getElementById("key-name").focus(); return; }
    if (!scopes.length) { out.className = "error result"; out.textContent = "Choose what the key may do: read, write, or both."; return; }
    const payload = { name, scopes, user: document.getElementById("key-user").value || "owner" };
    const days = document.getElementById("key-expiry").value;
    if (days) payload.expires_days = Number(days);
    const made = await change("POST", "api/keys", payload, out);
    if (!made) return;
    document.getElementById("key-name").value = "";
    showNewKey(made);
    await loadAccounts();
  });

  // The new key, shown this once, with a way to copy it.
  function showNewKey(made) {
    const box = document.getElementById("new-key");
    document.getElementById("new-key-value").value = made.key;
    document.getElementById("new-key-title").textContent = `The new key ${made.name} for ${made.user}`;
    document.getElementById("new-key-copied").textContent = "";
    box.hidden = false;
    document.getElementById("new-key-value").focus();
    document.getElementById("new-key-value").select();
  }

  document.getElementById("new-key-copy").addEventListener("click", () =>
    copyField("new-key-value", "new-key-copied", "key"));

  document.getElementById("new-key-done").addEventListener("click", () => {
    document.getElementById("new-key-value").value = "";
    document.getElementById("new-key").hidden = true;
    document.getElementById("key-name").focus();
  });

  // ---- users ----
  function renderUsers(users) {
    document.getElementById("users-list").replaceChildren(...users.map((u) => {
      const bits = [];
      if (u.owns.length) bits.push("owns " + u.owns.map(deviceName).join(", "));
      if (u.shared.length) bits.push("shared: " + u.shared.map((s) => deviceName(s.serial) + " (" + s.access + ")").join(", "));
      bits.push(u.keys + " API key" + (u.keys === 1 ? "" : "s"));
      const out = el("p", { class: "note result", role: "status" });
      const row = el("li", { "data-user": u.name },
        el("span", { class: "grow" }, el("strong", {}, u.name), u.default ? " (this server's default user)" : "",
          el("br"), el("span", { class: "note" }, bits.join(" · "))), out);
      if (!u.default) {
        const remove = el("button", { type: "button", "aria-label": `Remove the user ${u.name}` }, "Remove");
        row.insertBefore(remove, out);
        deleteAsked(row, remove, `Remove ${u.name}? Their API keys stop working and nothing is shared with them any more.`, "Remove",
          "api/users/" + encodeURIComponent(u.name), out, listed);
      }
      return row;
    }));
  }

  document.getElementById("user-add").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = document.getElementById("user-name");
    const out = document.getElementById("user-add-result");
    if (!input.value.trim()) { out.className = "error result"; out.textContent = "Enter the new user's name."; input.focus(); return; }
    const done = await change("POST", "api/users", { name: input.value.trim() }, out);
    if (!done) return;
    input.value = "";
    out.textContent = done.message + ".";
    await loadAccounts();
  });

  // ---- sharing ----
  const deviceName = (serial) => { const c = cards.get(serial); return c && c.data.name ? `${c.data.name}` : serial; };

  function renderShares(shares) {
    document.getElementById("shares-none").hidden = shares.length > 0;
    document.getElementById("shares-list").replaceChildren(...shares.map((s) => {
      const out = el("p", { class: "note result", role: "status" });
      const thermostat = s.name || deviceName(s.serial);
      const stop = el("button", { type: "button", "aria-label": `Stop sharing ${thermostat} with ${s.user}` }, "Stop sharing");
      const row = el("li", {},
        el("span", { class: "grow" }, el("strong", {}, thermostat), ` with ${s.user} · ` + (s.access === "control" ? "may change it" : "may see it")),
        stop, out);
      stop.addEventListener("click", async () => {
        stop.disabled = true;
        const done = await change("DELETE", "api/shares/" + encodeURIComponent(s.serial) + "/" + encodeURIComponent(s.user), undefined, out);
        stop.disabled = false;
        if (done) { say(done.message); await loadAccounts(); }
      });
      return row;
    }));
  }

  document.getElementById("share-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = document.getElementById("share-result");
    const serial = document.getElementById("share-device").value;
    const user = document.getElementById("share-user").value;
    if (!serial || !user) { out.className = "error result"; out.textContent = "Choose a thermostat and a user (add the user first)."; return; }
    const done = await change("POST", "api/shares", { serial, user, access: document.getElementById("share-access").value }, out);
    if (!done) return;
    out.textContent = done.message + ".";
    await loadAccounts();
  });

  // The choices of the forms: users for keys and shares, the page's thermostats for shares.
  function fillChoices() {
    const options = (select, items) => {
      const kept = select.value;
      select.replaceChildren(...items.map(([value, text]) => el("option", { value }, text)));
      if (items.some(([v]) => v === kept)) select.value = kept;
    };
    options(document.getElementById("key-user"), acct.users.map((u) => [u.name, u.name]));
    const others = acct.users.filter((u) => !u.default).map((u) => [u.name, u.name]);
    options(document.getElementById("share-user"), others.length ? others : [["", "add a user first"]]);
    options(document.getElementById("share-device"), [...cards.values()].map((c) => [c.serial, nameOf(c)]));
  }

  // The panel's own announcements: what was done, for screen readers and eyes alike.
  function say(text) { document.getElementById("accounts-done").textContent = text.endsWith(".") ? text : text + "."; }

  document.getElementById("forget-key").addEventListener("click", () => {
    keyStore.removeItem("hearth-key");
    apiKey = "";
    document.getElementById("saved-key").hidden = true;
    say("This browser no longer keeps the key");
    document.querySelector("#accounts > summary").focus();
  });
})();
