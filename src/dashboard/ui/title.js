"use strict";
// The tab's (and a home-screen app's) title names the server: "hearth · study-pi" when the page
// is reached by a name ("study-pi.local", "study-pi.lan", "study-pi.example.com": the first
// label). hearth has no name of its own to give; an address or localhost says nothing a person
// would recognise, and under Home Assistant's ingress the name is Home Assistant's, so the
// title then stays "hearth".
(function nameTheTab() {
  if (document.body.dataset.ingressPath) return;
  const host = location.hostname.toLowerCase();
  if (!host || host === "localhost" || /^[\d.]+$/.test(host) || host.includes(":") || host.startsWith("[")) return;
  const name = host.split(".")[0];
  if (name && name !== "hearth") document.title = "hearth · " + name;
})();
