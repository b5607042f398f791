/* Triage: the panel of a session page (claim, assign, acknowledge, resolve with a reason and an optional review,
   reopen) and the Triage page (live columns, filters, bulk claim and resolve). Every action goes through the API;
   the HTML swapped in comes from the server, which escapes it. */
"use strict";

(() => {
  const CONFLICT_PREFIX = "Someone else acted first: ";

  function show(id, text) {
    const node = document.getElementById(id);
    if (!node) return;
    node.textContent = text;
    node.hidden = !text;
  }

  function failure(result) {
    const text = Tarsy.errorText(result.data);
    return result.status === 409 ? CONFLICT_PREFIX + text : text;
  }

  // ---- the session page's panel ---------------------------------------------------------------------------
  const sessionPage = document.getElementById("session-page");
  if (sessionPage) {
    const sessionId = sessionPage.dataset.sessionId;
    const url = `/api/v1/sessions/${sessionId}/triage`;

    async function refreshPanel() {
      let html;
      try { html = await Tarsy.fetchText(`/sessions/${sessionId}/fragments/triage`); } catch (e) { return; }
      const target = document.getElementById("session-triage");
      target.replaceChildren(Tarsy.fragment(html));
      Tarsy.localTimes(target);
    }

    async function act(body) {
      show("triage-error", "");
      const result = await Tarsy.api("POST", url, body);
      if (!result.ok) show("triage-error", failure(result));
      await refreshPanel();  // the state as it is now, whoever changed it
      return result.ok;
    }

    sessionPage.addEventListener("click", async (e) => {
      const button = e.target.closest("[data-triage-action]");
      if (button) { button.disabled = true; await act({action: button.dataset.triageAction}); return; }
      if (e.target.closest("#triage-resolve-open")) document.getElementById("triage-resolve-dialog").showModal();
      if (e.target.closest("#triage-resolve-cancel")) document.getElementById("triage-resolve-dialog").close();
    });

    sessionPage.addEventListener("submit", async (e) => {
      if (e.target.id === "triage-assign-form") {
        e.preventDefault();
        const assignee = e.target.assignee.value.trim();
        if (!assignee) { show("triage-error", "Choose whom to assign it to."); return; }
        await act({action: "assign", assignee});
      } else if (e.target.id === "triage-resolve-form") {
        e.preventDefault();
        const form = e.target;
        const resolution = form.querySelector('input[name="resolution"]:checked');
        const rating = form.querySelector('input[name="triage_rating"]:checked');
        form.closest("dialog").close();
        if (rating) {  // the accuracy review, saved first: a resolved session can still be reviewed either way
          const review = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/review`, {rating: rating.value});
          if (!review.ok) { show("triage-error", Tarsy.errorText(review.data)); return; }
          if (window.TarsyQuality) window.TarsyQuality.refresh();
        }
        await act({action: "resolve", resolution: resolution ? resolution.value : "", note: form.note.value});
      }
    });

    window.TarsyTriage = {refreshPanel};  // session.js calls it on triage.updated and when the session finishes
    return;
  }

  // ---- the Triage page ------------------------------------------------------------------------------------
  const page = document.getElementById("triage-page");
  if (!page) return;
  const board = document.getElementById("triage-board");

  const picked = () => [...board.querySelectorAll("input.bulk-pick:checked")].map((box) => box.value);

  function updateBulk() {
    const count = picked().length;
    document.getElementById("bulk-count").textContent = count ? `${count} selected` : "None selected";
    document.getElementById("bulk-claim").disabled = !count;
    document.getElementById("bulk-resolve").disabled = !count;
  }

  let latest = 0;
  async function reload() {
    const ticket = ++latest;
    const params = new URLSearchParams(window.location.search);
    params.set("fragment", "board");
    let html;
    try { html = await Tarsy.fetchText(`/triage?${params}`); } catch (e) { return; }
    if (ticket !== latest) return;  // a newer reload is on its way
    const keep = new Set(picked());  // read now: a box ticked while the request was out stays ticked
    board.replaceChildren(Tarsy.fragment(html));
    for (const box of board.querySelectorAll("input.bulk-pick")) box.checked = keep.has(box.value);
    Tarsy.localTimes(board);
    updateBulk();
  }
  const refresh = Tarsy.debounce(reload, 150);

  new Tarsy.LiveSocket({sessions: Number(page.dataset.cursor) || 0}, (event) => {
    if (event.type === "triage.updated" || event.type === "session.quality") refresh();
  });

  board.addEventListener("change", (e) => { if (e.target.matches("input.bulk-pick")) updateBulk(); });

  async function bulk(action) {
    const ids = picked();
    if (!ids.length) return;
    const body = {session_ids: ids, action};
    if (action === "resolve") {
      body.resolution = document.getElementById("bulk-resolution").value;
      body.note = document.getElementById("bulk-note").value;
    }
    show("bulk-result", "");
    const result = await Tarsy.api("POST", "/api/v1/sessions/triage", body);
    if (!result.ok) { show("bulk-result", Tarsy.errorText(result.data)); return; }
    const failed = result.data.results.filter((r) => !r.ok);
    const done = result.data.results.length - failed.length;
    const verb = action === "claim" ? "Claimed" : "Resolved";
    show("bulk-result", `${verb} ${done} of ${ids.length}.` + (failed.length
      ? " Not changed: " + failed.map((r) => `${r.session_id.slice(0, 8)} (${r.error})`).join("; ") : ""));
    document.getElementById("bulk-result").classList.toggle("partial", failed.length > 0);
    for (const box of board.querySelectorAll("input.bulk-pick:checked")) box.checked = false;
    await reload();
  }
  document.getElementById("bulk-claim").addEventListener("click", () => bulk("claim"));
  document.getElementById("bulk-resolve").addEventListener("click", () => bulk("resolve"));

  // Filters apply as they change; empty ones stay out of the URL.
  const form = document.getElementById("triage-filters");
  form.addEventListener("change", (e) => { if (e.target.tagName === "SELECT") form.requestSubmit(); });
  form.addEventListener("submit", () => {
    for (const el of form.elements) if ((el.tagName === "SELECT" || el.type === "number") && !el.value) el.disabled = true;
  });
  updateBulk();
})();
