/* Approved actions on the session page: Approve / Reject (with a comment) through /api/v1/actions, and the panel
   redrawn from the server on every `action` event of the session (proposed, decided, executed with its outcome).
   The HTML swapped in comes from the server, which escapes it. */
"use strict";

(() => {
  const page = document.getElementById("session-page");
  if (!page) return;
  const sessionId = page.dataset.sessionId;
  const CONFLICT_PREFIX = "Someone else acted first: ";
  let latest = 0;

  function showError(text) {
    const node = document.getElementById("actions-error");
    node.textContent = text;
    node.hidden = !text;
  }

  async function refreshPanel() {
    const ticket = ++latest;
    let html;
    try { html = await Tarsy.fetchText(`/sessions/${sessionId}/fragments/actions`); } catch (e) { return; }
    if (ticket !== latest) return;  // a newer refresh is on its way
    const target = document.getElementById("session-actions");
    // What the reader typed and opened stays: comments by action, open rows by action.
    const typed = new Map([...target.querySelectorAll("form[data-action-form]")].map(
      (form) => [form.dataset.actionForm, form.comment.value]));
    const opened = new Set([...target.querySelectorAll("li[data-action-row] > details[open]")].map(
      (d) => d.parentElement.dataset.actionRow));
    target.replaceChildren(Tarsy.fragment(html));
    for (const form of target.querySelectorAll("form[data-action-form]")) {
      form.comment.value = typed.get(form.dataset.actionForm) || "";
    }
    for (const row of target.querySelectorAll("li[data-action-row]")) {
      if (opened.has(row.dataset.actionRow)) row.querySelector("details").open = true;
    }
    Tarsy.localTimes(target);
    Tarsy.tick();
  }

  page.addEventListener("click", async (e) => {
    const button = e.target.closest("[data-action-decide]");
    if (!button) return;
    const form = button.closest("form[data-action-form]");
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    showError("");
    const verb = button.dataset.actionDecide;
    const result = await Tarsy.api("POST", `/api/v1/actions/${form.dataset.actionForm}/${verb}`,
                                   {comment: form.comment.value});
    if (!result.ok) {
      const text = Tarsy.errorText(result.data);
      showError(result.status === 409 ? CONFLICT_PREFIX + text : text);
    }
    await refreshPanel();  // the state as it is now, whoever changed it
  });

  window.TarsyActions = {refreshPanel};  // session.js calls it on the session's `action` timeline events
})();
