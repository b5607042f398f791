/* Session page: the live timeline (incremental: one node per event, chunks appended to a text node),
   header/summary refreshes, cancel, and the follow-up chat. All HTML inserted here comes from the server,
   which escapes or sanitizes it; streamed text is only ever added as text. */
"use strict";

(() => {
  const page = document.getElementById("session-page");
  if (!page) return;
  const sessionId = page.dataset.sessionId;
  const base = `/sessions/${sessionId}`;
  const channel = `session:${sessionId}`;
  const pendingChunks = new Map();   // event id → [delta] for chunks that beat their event's node
  const stageLoads = new Map();      // stage id → promise of the group being in the page
  const toRender = new Set();        // event ids whose final rendering must be fetched
  const RENDER_BATCH_MS = 60;        // completed events are re-rendered in batches, not one request each

  // ---- timeline nodes ---------------------------------------------------------------------------------------
  const eventNode = (id) => page.querySelector(`li.ev[data-event-id="${id}"]`);

  function containerFor(ev) {
    if (ev.execution_id) return page.querySelector(`ol[data-container="exec-${ev.execution_id}"]`);
    if (ev.stage_id) return page.querySelector(`ol[data-container="stage-${ev.stage_id}"]`);
    return page.querySelector('ol[data-container="session"]');
  }

  const LABELS = {llm_thinking: "Thinking", llm_response: "Response", final_analysis: "Final analysis",
                  mcp_tool_call: "Tool", llm_tool_call: "Tool call", user_question: "Question"};

  /** A placeholder for a streaming event: its text grows by appendData on one Text node. */
  function streamingNode(ev) {
    const li = document.createElement("li");
    li.className = `ev ev-${ev.event_type} streaming`;
    li.dataset.eventId = ev.id;
    li.dataset.status = ev.status;
    const head = document.createElement("div");
    head.className = "ev-head";
    const label = document.createElement("span");
    label.className = "ev-label";
    const meta = ev.metadata || {};
    label.textContent = ev.event_type === "llm_thinking" && meta.source === "react" ? "Thought"
      : (LABELS[ev.event_type] || ev.event_type.replace(/_/g, " "));
    head.append(label);
    if (meta.server_name || meta.tool_name) {
      const code = document.createElement("code");
      code.className = "tool";
      code.textContent = [meta.server_name, meta.tool_name].filter(Boolean).join(".");
      head.append(" ", code);
    }
    const dot = document.createElement("span");
    dot.className = "live-dot";
    dot.setAttribute("aria-label", "streaming");
    head.append(" ", dot);
    const body = document.createElement("div");
    body.className = "stream-text";
    body.append(document.createTextNode(ev.content || ""));
    li.append(head, body);
    return li;
  }

  function appendDelta(li, delta) {
    const body = li.querySelector(".stream-text");
    if (!body) return;
    if (!body.lastChild || body.lastChild.nodeType !== Node.TEXT_NODE) body.append(document.createTextNode(""));
    body.lastChild.appendData(delta);
  }

  async function ensureStage(stageId) {
    if (!stageId || page.querySelector(`[data-stage-ids~="${stageId}"]`)) return;
    if (!stageLoads.has(stageId)) stageLoads.set(stageId, loadStage(stageId).finally(() => stageLoads.delete(stageId)));
    return stageLoads.get(stageId);
  }

  /** Insert or replace the group (stage + its synthesis, or a chat turn) that holds this stage. */
  async function loadStage(stageId) {
    let html;
    try { html = await Tarsy.fetchText(`${base}/stages/${stageId}`); } catch (e) { return; }
    const node = Tarsy.fragment(html).firstElementChild;
    if (!node) return;
    const isChat = node.classList.contains("chat-turn");
    const existing = page.querySelector(`[data-group-id="${node.dataset.groupId}"]`);
    const selected = existing && existing.querySelector('[role="tab"][aria-selected="true"]');
    const opened = existing ? [...existing.querySelectorAll("details[data-sub-agent][open]")].map((d) => d.dataset.subAgent) : [];
    if (existing) {
      existing.replaceWith(node);
    } else {
      const list = isChat ? document.getElementById("chat-turns") : document.getElementById("stages");
      if (!list) { await refresh("chat"); return; }
      const empty = list.querySelector(".empty");
      if (empty) empty.remove();
      const index = Number(node.dataset.index);
      const after = [...list.querySelectorAll(":scope > [data-index]")].find((g) => Number(g.dataset.index) > index);
      list.insertBefore(node, after || null);
    }
    if (selected) {
      const again = node.querySelector(`#${CSS.escape(selected.id)}`);
      if (again) Tarsy.selectTab(again);
    }
    for (const id of opened) {  // the sub-agents the user had opened stay open
      const again = node.querySelector(`details[data-sub-agent="${CSS.escape(id)}"]`);
      if (again) again.open = true;
    }
    Tarsy.localTimes(node);
  }

  async function onCreated(ev) {
    if (eventNode(ev.id)) return;
    await ensureStage(ev.stage_id);
    if (eventNode(ev.id)) return;  // the group fragment already held it
    if (ev.execution_id && !containerFor(ev)) {
      // A sub-agent dispatched since the stage was shown: its group is rendered again, with the new tab.
      if (!stageLoads.has(ev.stage_id)) stageLoads.set(ev.stage_id, loadStage(ev.stage_id).finally(() => stageLoads.delete(ev.stage_id)));
      await stageLoads.get(ev.stage_id);
      if (eventNode(ev.id)) return;
    }
    if (ev.execution_id) setStatusBadge(`[data-exec-status="${ev.execution_id}"].status-pending`, "active");
    const container = containerFor(ev);
    if (!container) { scheduleRender(ev.id); return; }
    container.hidden = false;
    const li = streamingNode(ev);
    container.append(li);
    for (const delta of pendingChunks.get(ev.id) || []) appendDelta(li, delta);
    pendingChunks.delete(ev.id);
    if (ev.status !== "streaming") scheduleRender(ev.id);
  }

  function onChunk(message) {
    const li = eventNode(message.timeline_event_id);
    if (li && li.classList.contains("streaming")) appendDelta(li, message.delta);
    else if (!li) {
      const list = pendingChunks.get(message.timeline_event_id) || [];
      list.push(message.delta);
      pendingChunks.set(message.timeline_event_id, list);
    }
  }

  async function onCompleted(ev) {
    if ((ev.metadata || {}).superseded) {
      const li = eventNode(ev.id);
      if (li) li.remove();
      return;
    }
    if (!eventNode(ev.id)) await onCreated(ev);
    scheduleRender(ev.id);
    refreshHeader();  // token totals move with every finished call
  }

  let renderTimer = null;
  async function flushRenders() {
    renderTimer = null;
    const ids = [...toRender];
    toRender.clear();
    if (!ids.length) return;
    const result = await Tarsy.api("GET", `${base}/events?ids=${ids.join(",")}`);
    if (!result.ok) return;
    for (const [id, html] of Object.entries(result.data.events)) {
      const node = Tarsy.fragment(html).firstElementChild;
      const current = eventNode(id);
      if (!node) continue;
      if (current) {
        current.replaceWith(node);
      } else {
        const container = containerFor({execution_id: node.dataset.executionId, stage_id: node.dataset.stageId});
        if (container) { container.hidden = false; container.append(node); }
      }
    }
    for (const id of result.data.missing || []) {
      const gone = eventNode(id);
      if (gone) gone.remove();
    }
  }

  function scheduleRender(id) {
    toRender.add(id);
    if (!renderTimer) renderTimer = setTimeout(flushRenders, RENDER_BATCH_MS);
  }

  // ---- header, summary, chat ------------------------------------------------------------------------------
  const FRAGMENT_TARGETS = {header: "session-header", summary: "session-summary", chat: "chat", loose: "session-items"};

  const latestRefresh = {};  // fragment name → number of the newest request: older answers are stale

  async function refresh(name) {
    if (!document.getElementById(FRAGMENT_TARGETS[name])) return;
    const ticket = (latestRefresh[name] || 0) + 1;
    latestRefresh[name] = ticket;
    let html;
    try { html = await Tarsy.fetchText(`${base}/fragments/${name}`); } catch (e) { return; }
    if (ticket !== latestRefresh[name]) return;
    const target = document.getElementById(FRAGMENT_TARGETS[name]);
    const focusedId = document.activeElement && target.contains(document.activeElement) ? document.activeElement.id : "";
    if (name === "chat") {
      // keep what the user is typing and the streaming turns already on the page
      const input = document.getElementById("chat-input");
      const typed = input ? input.value : "";
      target.replaceChildren(Tarsy.fragment(html));
      const again = document.getElementById("chat-input");
      if (again) again.value = typed;
    } else {
      target.replaceChildren(Tarsy.fragment(html));
    }
    Tarsy.localTimes(target);
    Tarsy.tick();
    if (focusedId && document.getElementById(focusedId)) document.getElementById(focusedId).focus();
  }

  const refreshHeader = Tarsy.debounce(() => refresh("header"), 150);

  function setStatusBadge(selector, status, prefix) {
    for (const badge of page.querySelectorAll(selector)) {
      badge.className = `badge status-${status}`;
      badge.textContent = (prefix || "") + status;
    }
  }

  function onStage(message) {
    // A finished stage is re-rendered once: final statuses, iteration counts and tokens.
    const ready = message.type === "stage.completed" ? loadStage(message.stage_id) : ensureStage(message.stage_id);
    ready.then(() => {
      setStatusBadge(`[data-stage-status="${message.stage_id}"]`, message.status, message.kind === "synthesis" ? "synthesis: " : "");
      for (const ex of message.executions || []) setStatusBadge(`[data-exec-status="${ex.id}"]`, ex.status);
      if (message.kind === "chat") updateChatControls();
    });
    refreshHeader();
  }

  /** A sub-agent's (or a parked orchestrator's) status: a sub-agent new to the page re-renders its stage (the
      tree gains its node); a finished one too (its duration and tokens); otherwise only its badges change. */
  function onExecutionStatus(message) {
    const known = page.querySelector(`[data-exec-status="${CSS.escape(message.execution_id)}"]`);
    const finished = ["completed", "failed", "timed_out", "cancelled"].includes(message.status);
    if (!known || (finished && message.parent_execution_id)) {
      if (!stageLoads.has(message.stage_id)) stageLoads.set(message.stage_id, loadStage(message.stage_id).finally(() => stageLoads.delete(message.stage_id)));
      stageLoads.get(message.stage_id).then(() => setStatusBadge(`[data-exec-status="${CSS.escape(message.execution_id)}"]`, message.status));
    } else {
      setStatusBadge(`[data-exec-status="${CSS.escape(message.execution_id)}"]`, message.status);
    }
    refreshHeader();
  }

  function onSessionStatus(message, completed) {
    if (message.status) TarsySessionState.show(message.status, message);
    refreshHeader();
    if (completed) {
      refresh("summary");
      refresh("loose");
      refresh("chat");
    }
  }

  function onChatMessage(message) {
    if (message.role === "assistant") {
      chatBusy(false);
      refresh("chat");
    }
  }

  // ---- actions --------------------------------------------------------------------------------------------
  page.addEventListener("click", async (e) => {
    if (e.target.closest("#cancel-session")) {
      const button = e.target.closest("#cancel-session");
      button.disabled = true;
      button.textContent = "Cancelling…";
      const result = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/cancel`);
      if (!result.ok) {
        const error = document.getElementById("cancel-error");
        error.textContent = Tarsy.errorText(result.data);
        error.hidden = false;
        button.disabled = false;
        button.textContent = "Cancel investigation";
      }
      refreshHeader();
    }
    if (e.target.closest("#chat-cancel")) {
      const result = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/cancel`);
      if (!result.ok) showChatError(Tarsy.errorText(result.data));
    }
  });

  function showChatError(text) {
    const error = document.getElementById("chat-error");
    if (!error) return;
    error.textContent = text;
    error.hidden = !text;
  }

  function chatBusy(busy) {
    const send = document.getElementById("chat-send");
    const cancel = document.getElementById("chat-cancel");
    if (send) send.disabled = busy;
    if (cancel) cancel.hidden = !busy;
  }

  function updateChatControls() {
    const running = page.querySelector([".status-active", ".status-pending", ".status-waiting", ".status-queued"].map((s) => `.chat-turn .badge[data-exec-status]${s}`).join(", "));
    chatBusy(Boolean(running));
  }

  page.addEventListener("submit", async (e) => {
    if (e.target.id !== "chat-form") return;
    e.preventDefault();
    const input = document.getElementById("chat-input");
    const content = input.value.trim();
    if (!content) { showChatError("Type a question first."); return; }
    showChatError("");
    chatBusy(true);
    const result = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/chat/messages`, {content});
    if (result.ok) {
      input.value = "";
      const stageId = result.data && (result.data.stage_id || (result.data.stage && result.data.stage.id));
      if (stageId) ensureStage(stageId);
    } else {
      chatBusy(false);
      showChatError(Tarsy.errorText(result.data));
    }
  });

  page.addEventListener("keydown", (e) => {
    if (e.target.id === "chat-input" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      document.getElementById("chat-form").requestSubmit();
    }
  });

  // ---- dispatch -------------------------------------------------------------------------------------------
  function onEvent(message) {
    switch (message.type) {
      case "stream.chunk": onChunk(message); break;
      case "timeline_event.created":
        onCreated(message.timeline_event);
        if (message.timeline_event.event_type === "action" && window.TarsyActions) window.TarsyActions.refreshPanel();
        break;
      case "timeline_event.completed": onCompleted(message.timeline_event); break;
      case "stage.started": case "stage.completed": onStage(message); break;
      case "execution.status": onExecutionStatus(message); break;
      case "session.status": onSessionStatus(message, false); break;
      case "session.completed": onSessionStatus(message, true); break;
      case "session.occurrence": refreshHeader(); break;  // the alert count and related alerts
      case "chat.message": onChatMessage(message); break;
      case "triage.updated": if (window.TarsyTriage) window.TarsyTriage.refreshPanel(); break;
      default: break;
    }
  }

  const head = page.querySelector(".session-head");
  TarsySessionState.start(sessionId, head ? head.dataset.status : "pending");
  const seqs = page.dataset.cursorSeq ? {[channel]: Number(page.dataset.cursorSeq)} : {};
  window.tarsySocket = new Tarsy.LiveSocket({[channel]: Number(page.dataset.cursor) || 0}, onEvent, undefined, seqs);
})();
