"use strict";
// ---- Home/Away by who is home: the home's state and why, its people and their presence URLs
// (GET, POST and DELETE api/people), a vacation (/command set_vacation) ----
// In a scope of its own; the page calls `loadPeople` (on load, with its 30-second refresh, and
// when a thermostat's away changes) and nothing else. The server decides everything (the rule,
// the names, the dates): the page says what it answers, and its refusals in words.
const peoplePanel = (() => {
  const section = document.getElementById("people");
  const list = document.getElementById("people-list");
  const stateLine = document.getElementById("home-state");
  const SOURCES = { url: "phone", owntracks: "OwnTracks", home_assistant: "Home Assistant" };
  const rows = new Map();
  let view = null;

  async function load() {
    const r = await getJSON("api/people").catch(() => null);
    if (!r) return; // hearth did not answer: the section stays as it was
    // A server without people, or a key that may not read them: no section.
    if (!r.ok) { section.hidden = true; return; }
    view = r.body;
    render();
    section.hidden = false;
  }

  // ---- the home's state, in words ----
  function homeWords(h, people, now) {
    const at = (ms) => whenWords(new Date(ms), now);
    const rule = people.length > 0;
    const held = rule ? "; holds until someone arrives or leaves" : "";
    const v = h.vacation;
    // With nobody to go by, only a vacation is news: the cards already say Home or Away.
    if (!rule && !v) return "";
    if (h.away) {
      if (h.why === "vacation") return "Away until " + dayWords(v ? v.to : new Date(h.until - 1), now) + " — vacation";
      if (h.why === "everyone_left") return (h.since ? "Away since " + at(h.since) : "Away") + " — everyone left";
      if (h.why === "manual") return "Away — set by hand" + held;
      return h.since ? "Away since " + at(h.since) : "Away";
    }
    if (h.leaving_at) return "Everyone has left — away at " + at(h.leaving_at) + " unless someone returns";
    if (v) return "Vacation set: away from " + dayWords(v.from, now) + " to " + dayWords(v.to, now);
    if (h.why === "manual") return "Home — set by hand" + held;
    if (h.why === "vacation_ended" && h.since) return "Home since " + at(h.since) + " — the vacation ended";
    // Who keeps it home, by name (those never heard from count as home but are not named).
    const names = people.filter((p) => p.home === true).map((p) => p.name);
    if (!names.length) return "Home";
    if (names.length > 3) return "Home — " + names.length + " people are home";
    return "Home — " + (names.length === 1 ? names[0] + " is" : names.slice(0, -1).join(", ") + " and " + names.at(-1) + " are") + " home";
  }

  function render() {
    const now = new Date();
    const people = view.people || [];
    const home = view.home || {};
    setText(stateLine, homeWords(home, people, now));
    stateLine.hidden = !stateLine.textContent;
    stateLine.dataset.away = String(!!home.away);
    document.getElementById("people-invite").hidden = people.length > 0;
    list.hidden = people.length === 0;
    const names = new Set(people.map((p) => p.name));
    for (const [name, row] of rows) if (!names.has(name)) { row.li.remove(); rows.delete(name); }
    let before = null;
    for (const p of people) {
      const row = rows.get(p.name) || buildRow(p.name);
      updateRow(row, p, now);
      // In the server's order, moving only what is out of place (focus stays put).
      const next = before ? before.nextSibling : list.firstChild;
      if (row.li !== next) list.insertBefore(row.li, next);
      before = row.li;
    }
    showVacation(home.vacation);
  }

  // ---- a row per person ----
  function buildRow(name) {
    const r = { name };
    const path = "api/people/" + encodeURIComponent(name);
    r.status = el("span", { class: "people-status" });
    r.token = el("span", { class: "token" });
    r.note = el("span");
    r.out = el("p", { class: "note result", role: "status" });
    r.newUrl = el("button", { type: "button", "aria-label": `New presence URL for ${name}` }, "New URL");
    r.revoke = el("button", { type: "button", "aria-label": `Revoke the presence URL of ${name}` }, "Revoke URL");
    r.remove = el("button", { type: "button", "aria-label": `Remove ${name}` }, "Remove");
    r.li = el("li", { "data-person": name },
      el("span", { class: "grow" }, el("strong", {}, name), " ", r.status, el("br"), el("span", { class: "note" }, r.token, r.note)),
      r.newUrl, r.revoke, r.remove, r.out);
    r.newUrl.addEventListener("click", async () => {
      r.newUrl.disabled = true;
      const made = await change("POST", path + "/token", {}, r.out);
      r.newUrl.disabled = false;
      if (made) { showUrl(made, person(name)); await load(); }
    });
    asked(r, r.revoke, `Revoke ${name}'s presence URL? Whatever reports with it is refused from now on` +
      " (Home Assistant over MQTT still moves them).", "Revoke", path + "/token", `${name}'s presence URL is revoked.`);
    asked(r, r.remove, `Remove ${name}? Their presence URL stops working and they no longer count for Home/Away.`,
      "Remove", path, `${name} is removed.`);
    rows.set(name, r);
    return r;
  }

  function updateRow(r, p, now) {
    const since = p.since ? " since " + whenWords(new Date(p.since), now) : "";
    const source = p.source ? " · " + (SOURCES[p.source] || p.source) : "";
    const words = p.home === true ? "Home" + since + source
      : p.home === false ? "Away" + since + source
      : "never heard from (counts as home)";
    setText(r.status, words);
    r.status.className = "people-status " + (p.home === true ? "is-home" : p.home === false ? "is-away" : "unheard");
    r.li.dataset.home = p.home === null || p.home === undefined ? "unknown" : String(p.home);
    // Its presence URL's token (a preview), its MQTT topic, a region other than home's.
    const key = [p.token, p.topic, p.region].join("|");
    if (r.noteKey !== key) {
      r.noteKey = key;
      r.token.replaceChildren(...(p.token ? ["URL token ", el("code", {}, p.token)] : ["No presence URL"]));
      const more = [];
      if (p.topic) more.push(" · MQTT ", el("code", {}, p.topic));
      if (p.region && p.region !== "home") more.push(" · OwnTracks region ", el("code", {}, p.region));
      r.note.replaceChildren(...more);
    }
    r.revoke.hidden = !p.token || r.asking === r.revoke;
  }

  const person = (name) => (view && (view.people || []).find((p) => p.name === name)) || { name };

  // Asked twice (util.js); then the focus goes to the row's first control, or the panel's.
  const asked = (r, button, question, yes, path, done) => deleteAsked(r.li, button, question, yes, path, r.out, async () => {
    say(done);
    await load();
    const row = rows.get(r.name);
    (row ? row.newUrl : document.getElementById("person-add-open")).focus();
  }, (b) => { r.asking = b; });

  function say(text) { document.getElementById("people-done").textContent = text; }

  // ---- the presence URL and its token (shown once), with a guide per tool ----
  // Made from the page's own address and prefix, so it is right behind a reverse proxy. A URL of
  // Home Assistant's ingress needs a Home Assistant login, which a phone's request does not have.
  // The token goes apart, in a header: a reverse proxy logs URLs.
  function showUrl(made, p) {
    const box = document.getElementById("person-url");
    const url = new URL(rel(made.path.replace(/^\/+/, "")), document.baseURI).href;
    const input = document.getElementById("person-url-value");
    input.value = url;
    document.getElementById("person-token").value = made.token;
    setText(document.getElementById("person-url-title"), `${made.name}'s presence URL`);
    document.getElementById("person-url-copied").textContent = "";
    const warn = [];
    if (ingress) warn.push("This page is opened through Home Assistant, whose address a phone cannot use without logging in: " +
      "use hearth's own address and port (8082) instead, reachable from the phone, or Home Assistant over MQTT below.");
    else if (location.protocol === "http:") warn.push("This is plain http: use it on the home network or through a VPN " +
      "(WireGuard, Tailscale). The token must never cross the internet over plain http; behind a reverse proxy use its https address.");
    const warning = document.getElementById("person-url-warning");
    warning.textContent = warn.join(" ");
    warning.hidden = !warn.length;
    document.getElementById("person-url-guide").replaceChildren(...guide(made.name, p));
    box.hidden = false;
    input.focus();
    input.select();
  }

  // The steps for each tool an owner may already have; closed, one opened at a time by choice.
  function guide(name, p) {
    const code = (text) => el("code", {}, text);
    const bearer = () => code("Authorization: Bearer <token>");
    const step = (...parts) => el("li", {}, ...parts);
    const tool = (title, ...body) => el("details", { class: "tool" }, el("summary", {}, title), ...body);
    const region = p.region || "home";
    const topic = p.topic;
    const yaml = topic ? [
      `alias: "hearth: ${name} home or away"`,
      "triggers:",
      "  - trigger: state",
      `    entity_id: person.${name}`,
      "actions:",
      "  - action: mqtt.publish",
      "    data:",
      `      topic: ${topic}`,
      `      payload: "{{ states('person.${name}') }}"`,
      "      retain: true",
    ].join("\n") : "";
    return [
      tool("Home Assistant (works from anywhere)",
        el("p", {}, "If Home Assistant already knows who is home (its person entities), let it tell hearth over MQTT: no URL, no token, and nothing to reach from outside."),
        topic ? el("ol", {},
          step("Settings → Automations & scenes → Create automation → ⋮ → Edit in YAML."),
          step("Paste this (", code(`person.${name}`), " is the person in Home Assistant; change it if theirs is named otherwise):"),
        ) : el("p", { class: "note" }, "hearth has no MQTT broker (MQTT_HOST): set one, the same Home Assistant uses, to report this way."),
        topic ? el("pre", { tabindex: "0", "aria-label": "The automation, in YAML" }, yaml) : null,
        topic ? el("p", { class: "note" }, "It publishes the person's state to ", code(topic), ": home is home, not_home or any other zone is away.") : null),
      tool("iOS Shortcuts",
        el("ol", {},
          step("Shortcuts → Automation → New Automation → Arrive; choose home's location; Run Immediately."),
          step("Add the action Get Contents of URL: the URL with ", code("?home=1"), " at its end; Method POST; add the header ", bearer(), "."),
          step("One more automation for Leave, the same with ", code("?home=0"), "."))),
      tool("Android",
        el("ol", {},
          step("In HTTP Shortcuts, Tasker or MacroDroid, make a task that sends an HTTP POST to the URL with ", code("?home=1"),
            " at its end and the header ", bearer(), "."),
          step("Another with ", code("?home=0"), "."),
          step("Run the first on entering the home's area (a location or the home Wi-Fi), the second on leaving it."))),
      tool("OwnTracks",
        el("ol", {},
          step("Settings → Connection: Mode HTTP; URL: the URL as it is; any user name, and the token as the password."),
          step("Regions: add one named ", code(region), " around the home. OwnTracks reports entering and leaving it."))),
      el("p", { class: "note" }, "A tool that can set no header may end the URL with ", code("?home=1&token=<token>"),
        ", as a last resort: a reverse proxy logs URLs, and the token with them."),
      el("p", { class: "note" }, "A leave is reported once the phone is away, so the URL must be reachable from outside the home " +
        "(a VPN, or a reverse proxy with https and ALLOWED_HOSTS); an arrival usually comes from inside it."),
    ];
  }

  document.getElementById("person-url-copy").addEventListener("click", () => copyField("person-url-value", "person-url-copied", "URL"));
  document.getElementById("person-token-copy").addEventListener("click", () => copyField("person-token", "person-url-copied", "token"));

  document.getElementById("person-url-done").addEventListener("click", () => {
    document.getElementById("person-url-value").value = document.getElementById("person-token").value = "";
    document.getElementById("person-url-guide").replaceChildren();
    document.getElementById("person-url").hidden = true;
    document.getElementById("person-add-open").focus();
  });

  // ---- the two forms, each behind its button ----
  function toggles(buttonId, formId, first) {
    const button = document.getElementById(buttonId);
    const form = document.getElementById(formId);
    button.addEventListener("click", () => {
      form.hidden = !form.hidden;
      button.setAttribute("aria-expanded", String(!form.hidden));
      if (!form.hidden) document.getElementById(first).focus();
    });
  }
  toggles("person-add-open", "person-add", "person-name");
  toggles("vacation-open", "vacation-form", "vacation-from");

  document.getElementById("person-add").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = document.getElementById("person-name");
    const region = document.getElementById("person-region");
    const out = document.getElementById("person-add-result");
    if (!name.value.trim()) {
      out.className = "error result";
      out.textContent = "Enter the person's name.";
      name.focus();
      return;
    }
    const payload = { name: name.value.trim() };
    if (region.value.trim()) payload.region = region.value.trim();
    const made = await change("POST", "api/people", payload, out);
    if (!made) { name.focus(); return; }
    name.value = "";
    region.value = "";
    await load();
    showUrl(made, person(made.name));
  });

  // ---- vacation ----
  // The home is the owner's, named by any of its thermostats; with none, no vacation.
  function homeSerial() {
    const all = [...cards.values()];
    const mine = all.find((c) => c.data.owner === "owner") || all.find((c) => !c.data.owner);
    return mine ? mine.serial : null;
  }
  const NONE = "No thermostat of this home yet: a vacation is away on its thermostats.";

  function showVacation(v) {
    const cancel = document.getElementById("vacation-cancel");
    cancel.hidden = !v;
    const key = v ? v.from + "/" + v.to : "";
    // The dates are filled from what is set only when that changes, never over someone's typing.
    if (showVacation.shown !== key) {
      showVacation.shown = key;
      document.getElementById("vacation-from").value = v ? v.from : "";
      document.getElementById("vacation-to").value = v ? v.to : "";
    }
    const none = !homeSerial();
    document.querySelector("#vacation-form [type=submit]").disabled = cancel.disabled = none;
    const out = document.getElementById("vacation-result");
    if (none) { out.className = "note result"; out.textContent = NONE; } else if (out.textContent === NONE) out.textContent = "";
  }
  // Asked again on opening: the cards may come after the people.
  document.getElementById("vacation-open").addEventListener("click", () => showVacation(view?.home?.vacation));

  async function vacation(value, out) {
    const r = await change("POST", "command", { serial: homeSerial(), command: "set_vacation", value }, out);
    if (r && r.success === false) { out.className = "error result"; out.textContent = r.message || r.error || "Refused."; return false; }
    return Boolean(r);
  }

  document.getElementById("vacation-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const from = document.getElementById("vacation-from");
    const to = document.getElementById("vacation-to");
    const out = document.getElementById("vacation-result");
    if (!from.value || !to.value) {
      out.className = "error result";
      out.textContent = "Choose the first and the last day away.";
      (from.value ? to : from).focus();
      return;
    }
    if (!await vacation({ from: from.value, to: to.value }, out)) return;
    const now = new Date();
    out.textContent = `Vacation set: away from ${dayWords(from.value, now)} to ${dayWords(to.value, now)}, whoever comes and goes.`;
    await load();
    loadDevices().catch(() => {});
  });

  document.getElementById("vacation-cancel").addEventListener("click", async () => {
    const out = document.getElementById("vacation-result");
    if (!await vacation(false, out)) return;
    out.textContent = "Vacation cancelled.";
    await load();
    loadDevices().catch(() => {});
    document.getElementById("vacation-from").focus();
  });

  // At most one reload a second when thermostats' away changes arrive in a burst.
  let soon = null;
  function reloadSoon() {
    if (soon) return;
    soon = setTimeout(() => { soon = null; load().catch(() => {}); }, 1000);
  }

  return { load, reloadSoon };
})();

function loadPeople() { return peoplePanel.load(); }
