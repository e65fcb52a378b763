"use strict";
// ---- alert settings: the receivers, the limits and the rules (GET and PUT api/alerts/settings), ----
// ---- and "Send a test" (POST api/alerts/test) ----
// In a scope of its own. Loaded when the panel is opened and after each change. Each setting says
// where its value comes from (a flag wins, then a value saved here, then the add-on's option or
// the environment, then the default); a saved one can be cleared back to what is under it. The
// server checks every value (this page sends what was typed and shows its refusal), saves the
// change before it answers, and uses it at once.
(() => {
  const panel = document.getElementById("alert-settings");
  const body = document.getElementById("alert-settings-body");
  const error = document.getElementById("alert-settings-error");
  // The kinds' titles are alerts.js's (a rule it does not know is shown by its name).
  const RULE_TITLES = ALERT_TITLES;
  // [name, label]
  const RECEIVERS = [["ntfy_url", "ntfy topic URL"], ["webhook_url", "Webhook URL"]];
  const LIMITS = [
    ["alert_low_c", "Too cold below", "°C", "0.5"],
    ["alert_high_c", "Too hot above", "°C", "0.5"],
    ["alert_offline_minutes", "Offline after", "min", "any"],
    ["alert_not_heating_minutes", "Not heating or cooling after", "min", "any"],
    ["alert_not_applied_minutes", "Change not taken after", "min", "any"],
    ["filter_reminder_hours", "Filter reminder after", "hours", "any"],
  ];
  const WHERE = { environment: "environment's", option: "add-on option's", default: "default" };
  let view = null;
  let fields = {};

  async function loadAlertSettings() {
    const r = await getJSON("api/alerts/settings")
      .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
    error.textContent = r.ok ? "" : refusal(r);
    body.hidden = !r.ok;
    if (r.ok) render(r.body);
  }

  function refusal(r) {
    if (r.status === 401) return "This server wants an API key that can write (see API key above).";
    return r.body.error || r.body.message || "hearth did not answer (HTTP " + r.status + ")";
  }

  panel.addEventListener("toggle", () => { if (panel.open) loadAlertSettings(); });

  const shownValue = (name, v) => {
    if ("set" in v) return v.set ? "set" : "not set";
    if (name === "alert_rules_off") return v.value.length ? "off: " + v.value.map((r) => RULE_TITLES[r] || r).join(", ") : "every rule on";
    if (v.value === null || v.value === "") return "none";
    return String(v.value);
  };

  // Where a setting's value comes from, in words.
  function sourceText(name, s) {
    switch (s.source) {
      case "flag": return `Set by ${s.flag} on hearth's command line, which wins over this page: change it there.`;
      case "saved": return `Saved here. The ${WHERE[s.under.source] || s.under.source} value: ${shownValue(name, s.under)}.`;
      case "option": return "From the add-on's options.";
      case "environment": return `From the environment (${s.variable}).`;
      default: return "The default.";
    }
  }

  // A setting's row: its label and input, its source, and "Use the …" when saved here.
  function row(name, label, input, unit) {
    const s = view.settings[name];
    const id = "as-" + name;
    input.id = id;
    const note = el("span", { class: "note source", id: id + "-source" }, sourceText(name, s));
    input.setAttribute("aria-describedby", note.id);
    input.disabled = s.source === "flag";
    const line = el("div", { class: "setting", "data-setting": name, "data-source": s.source },
      el("label", { for: id }, label), el("span", { class: "value" }, input, unit ? el("span", { class: "unit" }, unit) : null), note);
    if (s.source === "saved") {
      const back = el("button", { type: "button", class: "back", "aria-label": `${label}: use the ${WHERE[s.under.source] || s.under.source} value instead of the one saved here` },
        "Use the " + (WHERE[s.under.source] || s.under.source));
      back.addEventListener("click", () => save({ [name]: null }, `${label} uses the ${WHERE[s.under.source] || s.under.source} value again.`));
      line.append(back);
    }
    fields[name] = { input, label };
    return line;
  }

  function render(v) {
    view = v;
    fields = {};
    const text = (name) => el("input", { type: "text", inputmode: "url", autocomplete: "off", spellcheck: "false",
      value: view.settings[name].value || "" });
    const receivers = el("fieldset", {}, el("legend", {}, "Where alerts go"),
      ...RECEIVERS.map(([name, label]) => row(name, label, text(name))),
      row("webhook_secret", "Webhook secret", el("input", { type: "password", autocomplete: "new-password",
        placeholder: view.settings.webhook_secret.set ? "set: type to replace" : "not set" })),
      el("p", { class: "note" }, "Whole URLs, starting with http: or https: (an ntfy topic nobody can guess). " +
        "An empty one sends nothing there. The secret signs each webhook post (X-Hearth-Signature) and is never shown again."));
    const limits = el("fieldset", {}, el("legend", {}, "Limits"),
      ...LIMITS.map(([name, label, unit, step]) => row(name, label,
        el("input", { type: "number", inputmode: "decimal", step, value: String(view.settings[name].value) }), unit)),
      el("p", { class: "note" }, "0 minutes or hours turns that rule off."));
    const off = view.settings.alert_rules_off;
    const checks = view.rules.map((r) => {
      const box = el("input", { type: "checkbox", "data-rule": r });
      box.checked = !off.value.includes(r);
      box.disabled = off.source === "flag";
      return el("label", { class: "check" }, box, RULE_TITLES[r] || r);
    });
    const rulesNote = el("p", { class: "note source", id: "as-alert_rules_off-source" }, sourceText("alert_rules_off", off));
    const rules = el("fieldset", { "aria-describedby": rulesNote.id, "data-setting": "alert_rules_off", "data-source": off.source },
      el("legend", {}, "Rules on"), el("div", { class: "checks" }, ...checks), rulesNote);
    if (off.source === "saved") {
      const back = el("button", { type: "button", class: "back", "aria-label": `Rules: use the ${WHERE[off.under.source]} value instead of the one saved here` },
        "Use the " + WHERE[off.under.source]);
      back.addEventListener("click", () => save({ alert_rules_off: null }, `The rules use the ${WHERE[off.under.source]} value again.`));
      rules.append(back);
    }
    fields.alert_rules_off = { input: rules, label: "Rules" };
    const saveButton = el("button", { type: "submit", class: "primary" }, "Save");
    const testButton = el("button", { type: "button", id: "alert-test" }, "Send a test");
    testButton.addEventListener("click", () => sendTest(testButton));
    const form = el("form", { id: "alert-settings-form", novalidate: "" }, receivers, limits, rules,
      el("div", { class: "controls" }, saveButton, testButton),
      el("p", { class: "note result", id: "alert-settings-result", role: "status" }),
      el("ul", { class: "rows", id: "alert-test-results", "aria-label": "Test results", hidden: "" }));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); save(changes(), "Saved: in force now, no restart needed."); });
    body.replaceChildren(form);
  }

  // What differs from the settings in force: what was typed, as typed (the server checks it).
  function changes() {
    const out = {};
    for (const [name] of RECEIVERS) {
      const f = fields[name];
      if (f.input.disabled) continue;
      const typed = f.input.value.trim();
      if (typed !== (view.settings[name].value || "")) out[name] = typed;
    }
    const secret = fields.webhook_secret.input;
    if (!secret.disabled && secret.value) out.webhook_secret = secret.value;
    for (const [name] of LIMITS) {
      const f = fields[name];
      if (f.input.disabled) continue;
      const typed = f.input.value.trim();
      if (typed !== String(view.settings[name].value)) out[name] = typed;
    }
    const boxes = [...body.querySelectorAll("input[data-rule]")];
    if (!boxes.some((b) => b.disabled)) {
      const off = boxes.filter((b) => !b.checked).map((b) => b.dataset.rule);
      if (off.join(",") !== view.settings.alert_rules_off.value.join(",")) out.alert_rules_off = off;
    }
    return out;
  }

  async function save(payload, done) {
    const result = document.getElementById("alert-settings-result");
    for (const f of Object.values(fields)) f.input.removeAttribute("aria-invalid");
    result.className = "note result";
    if (!Object.keys(payload).length) { result.textContent = "Nothing changed."; return; }
    result.textContent = "";
    const r = await callJSON("PUT", "api/alerts/settings", payload)
      .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
    if (!r.ok) {
      result.className = "error result";
      result.textContent = refusal(r);
      // The refusal names the setting first: that field is marked and focused.
      const named = (r.body.error || "").split(" ")[0];
      const f = fields[named];
      if (f) { f.input.setAttribute("aria-invalid", "true"); f.input.focus(); }
      return;
    }
    render(r.body);
    const again = document.getElementById("alert-settings-result");
    again.textContent = done;
  }

  // Sends a test to each receiver in force and says what each answered, and how fast.
  async function sendTest(button) {
    const result = document.getElementById("alert-settings-result");
    const list = document.getElementById("alert-test-results");
    result.className = "note result";
    if (Object.keys(changes()).length) {
      result.textContent = "Save first: a test goes to the receivers in force.";
      return;
    }
    button.disabled = true;
    result.textContent = "Sending a test…";
    const r = await callJSON("POST", "api/alerts/test", {})
      .catch((e) => ({ ok: false, status: 0, body: { error: "hearth did not answer (" + e.message + ")" } }));
    button.disabled = false;
    if (!r.ok) {
      result.className = "error result";
      result.textContent = refusal(r);
      list.hidden = true;
      return;
    }
    const results = r.body.results || [];
    const names = { ntfy: "ntfy", webhook: "Webhook" };
    list.replaceChildren(...results.map((t) => {
      const what = "status" in t
        ? `answered ${t.status}${t.ok ? "" : " (not a success)"}`
        : `no answer: ${t.error === "refused" ? "connection refused" : t.error}`;
      return el("li", { "data-target": t.target, "data-ok": String(t.ok) },
        el("span", { class: "grow" }, el("strong", {}, names[t.target] || t.target), " " + what),
        el("span", { class: t.ok ? "ok-text" : "error" }, `${t.ok ? "reached" : "not reached"} · ${t.ms} ms`));
    }));
    list.hidden = false;
    const reached = results.filter((t) => t.ok).length;
    result.textContent = `Test sent: ${reached} of ${results.length} reached.`;
  }
})();
