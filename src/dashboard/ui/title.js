"use strict";
// The tab's (and a home-screen app's) title names the server: "hearth · study-pi" when the page
// is reached by a name. hearth has no name of its own to give; an address or localhost says
// nothing a person would recognise, so the title then stays "hearth".
(function nameTheTab() {
  const host = location.hostname.toLowerCase();
  if (!host || host === "localhost" || /^[\d.]+$/.test(host) || host.includes(":") || host.startsWith("[")) return;
  const name = host.replace(/\.(local|lan|home|internal|home\.arpa)$/, "");
  document.title = "hearth · " + name;
})();
