/* System page: MCP server health is checked on demand, so the page itself never waits on a server. */
"use strict";

(() => {
  const target = document.getElementById("mcp-servers");
  if (!target) return;
  async function load() {
    target.setAttribute("aria-busy", "true");
    try {
      target.replaceChildren(Tarsy.fragment(await Tarsy.fetchText("/system/mcp-servers")));
    } catch (e) {
      target.textContent = "Could not check the MCP servers: " + e.message;
    }
    target.setAttribute("aria-busy", "false");
  }
  document.getElementById("mcp-refresh").addEventListener("click", load);
  load();
  setInterval(() => { if (!document.hidden) load(); }, 15000);
})();
