/* Submit page: alert types from the API, text or key/value data, runbook, MCP/native tool selection;
   validation errors from the API are shown next to their fields; success opens the new session. */
"use strict";

(() => {
  const form = document.getElementById("submit-form");
  if (!form) return;
  const typeSelect = document.getElementById("alert-type");
  const rows = document.getElementById("kv-rows");

  // ---- alert types ----------------------------------------------------------------------------------------
  async function loadTypes() {
    const result = await Tarsy.api("GET", "/api/v1/alert-types");
    typeSelect.replaceChildren();
    if (!result.ok) {
      typeSelect.append(new Option("(default)", ""));
      showError("alert-type", "Could not load alert types: " + Tarsy.errorText(result.data));
      return;
    }
    const descriptions = {};
    for (const t of result.data.alert_types) {
      const option = new Option(`${t.alert_type} (chain ${t.chain_id})`, t.alert_type);
      option.selected = t.alert_type === result.data.default_alert_type;
      descriptions[t.alert_type] = t.description || "";
      typeSelect.append(option);
    }
    const help = document.getElementById("alert-type-help");
    const describe = () => { help.textContent = descriptions[typeSelect.value] || ""; };
    typeSelect.addEventListener("change", describe);
    describe();
  }

  // ---- data: free text or rows ----------------------------------------------------------------------------
  function addRow(key, value) {
    const tr = document.createElement("tr");
    const n = rows.children.length + 1;
    for (const [cls, val, label] of [["kv-key", key, `Key ${n}`], ["kv-value", value, `Value ${n}`]]) {
      const td = document.createElement("td");
      const input = document.createElement("input");
      input.className = cls;
      input.value = val || "";
      input.setAttribute("aria-label", label);
      td.append(input);
      tr.append(td);
    }
    const td = document.createElement("td");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove row ${n}`);
    remove.addEventListener("click", () => tr.remove());
    td.append(remove);
    tr.append(td);
    rows.append(tr);
    return tr;
  }

  document.getElementById("kv-add").addEventListener("click", () => addRow().querySelector("input").focus());
  for (const radio of form.querySelectorAll('input[name="data-mode"]')) {
    radio.addEventListener("change", () => {
      const asRows = form.querySelector('input[name="data-mode"]:checked').value === "rows";
      document.getElementById("data-text-wrap").hidden = asRows;
      document.getElementById("data-rows-wrap").hidden = !asRows;
      if (asRows && !rows.children.length) {
        let parsed = null;
        try { parsed = JSON.parse(document.getElementById("alert-data").value); } catch (e) { parsed = null; }
        if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
          for (const [k, v] of Object.entries(parsed)) addRow(k, typeof v === "string" ? v : JSON.stringify(v));
        } else { addRow(); addRow(); }
      }
    });
  }

  function alertData() {
    const mode = form.querySelector('input[name="data-mode"]:checked').value;
    if (mode === "rows") {
      const data = {};
      for (const tr of rows.children) {
        const key = tr.querySelector(".kv-key").value.trim();
        if (key) data[key] = tr.querySelector(".kv-value").value;
      }
      return Object.keys(data).length ? data : null;
    }
    const text = document.getElementById("alert-data").value;
    if (!text.trim()) return null;
    try {
      const parsed = JSON.parse(text);
      if (parsed && typeof parsed === "object") return parsed;
    } catch (e) { /* not JSON: sent as text */ }
    return text;
  }

  // ---- MCP and native tools -------------------------------------------------------------------------------
  const override = document.getElementById("mcp-override");
  override.addEventListener("change", () => {
    document.getElementById("mcp-choices").hidden = !override.checked;
    if (override.checked) loadTools();
  });

  let toolsLoaded = false;
  async function loadTools() {
    if (toolsLoaded) return;
    toolsLoaded = true;
    const result = await Tarsy.api("GET", "/system/mcp-servers?format=json");
    if (!result.ok) return;
    for (const server of result.data.servers) {
      const box = form.querySelector(`[data-tools-for="${CSS.escape(server.name)}"]`);
      if (!box) continue;
      box.replaceChildren();
      if (server.status !== "ok") { box.textContent = `Unavailable: ${server.error}`; continue; }
      const intro = document.createElement("span");
      intro.textContent = "Tools (none ticked = all):";
      box.append(intro);
      for (const tool of server.tools) {
        const label = document.createElement("label");
        label.className = "check";
        const input = document.createElement("input");
        input.type = "checkbox";
        input.className = "mcp-tool-box";
        input.value = tool.name;
        label.title = tool.description || "";
        label.append(input, " ", tool.name);
        box.append(label);
      }
    }
  }

  function mcpSelection() {
    const selection = {};
    if (override.checked) {
      selection.servers = [];
      for (const box of form.querySelectorAll(".mcp-server-box:checked")) {
        const server = {name: box.value};
        const tools = [...form.querySelectorAll(`[data-tools-for="${CSS.escape(box.value)}"] .mcp-tool-box:checked`)]
          .map((t) => t.value);
        if (tools.length) server.tools = tools;
        selection.servers.push(server);
      }
    }
    const native = {};
    for (const name of ["google_search", "url_context", "code_execution"]) {
      const value = form.elements[`native-${name}`].value;
      if (value) native[name] = value === "on";
    }
    if (Object.keys(native).length) selection.native_tools = native;
    return Object.keys(selection).length ? selection : null;
  }

  // ---- errors ---------------------------------------------------------------------------------------------
  const FIELDS = {alert_type: "alert-type", data: "data", runbook: "runbook", mcp: "mcp"};

  function showError(field, text) {
    const el = document.getElementById(`${field}-error`);
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
    const input = document.getElementById(field === "data" ? "alert-data" : field);
    if (input) input.setAttribute("aria-invalid", text ? "true" : "false");
  }

  function flatten(value) {
    if (Array.isArray(value)) return value.map(flatten).join(" ");
    if (value && typeof value === "object") {
      return Object.entries(value).map(([k, v]) => `${k}: ${flatten(v)}`).join(" ");
    }
    return String(value);
  }

  function clearErrors() {
    for (const id of Object.values(FIELDS)) showError(id, "");
    const general = document.getElementById("form-error");
    general.hidden = true;
    general.textContent = "";
  }

  // ---- submit ---------------------------------------------------------------------------------------------
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors();
    const data = alertData();
    if (data === null) {
      showError("data", "Enter the alert data (text, JSON or at least one key/value row).");
      (document.getElementById("alert-data").offsetParent ? document.getElementById("alert-data") : document.getElementById("kv-add")).focus();
      return;
    }
    const body = {data};
    if (typeSelect.value) body.alert_type = typeSelect.value;
    const runbook = document.getElementById("runbook").value.trim();
    if (runbook) body.runbook = runbook;
    const mcp = mcpSelection();
    if (mcp) body.mcp = mcp;
    const button = document.getElementById("submit-button");
    const status = document.getElementById("submit-status");
    button.disabled = true;
    status.textContent = "Submitting…";
    const result = await Tarsy.api("POST", "/api/v1/alerts", body);
    if (result.ok && result.data && result.data.session_id) {
      status.textContent = "Queued. Opening the session…";
      window.location.assign(`/sessions/${result.data.session_id}`);
      return;
    }
    button.disabled = false;
    status.textContent = "";
    const detail = result.data && result.data.detail;
    let placed = false;
    if (detail && typeof detail === "object" && !Array.isArray(detail)) {
      for (const [field, problems] of Object.entries(detail)) {
        if (FIELDS[field]) { showError(FIELDS[field], flatten(problems)); placed = true; }
      }
    }
    if (!placed || result.status === 413) {
      const general = document.getElementById("form-error");
      general.textContent = result.status === 413 ? "The alert data is too large (1 MB at most)." : Tarsy.errorText(result.data);
      general.hidden = false;
    }
    const first = form.querySelector('.field-error:not([hidden]), .form-error:not([hidden])');
    if (first) first.scrollIntoView({block: "center"});
  });

  loadTypes();
})();
