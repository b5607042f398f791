/* Session page quality panel: save the review, ask for a re-score, and follow a pending score until it lands.
   The panel's HTML comes from the server (escaped there); this script only swaps it in. */
"use strict";

(() => {
  const page = document.getElementById("session-page");
  if (!page) return;
  const sessionId = page.dataset.sessionId;
  const POLL_MS = 2000;       // a score usually takes one LLM call
  const POLL_LIMIT = 90;      // stop following after ~3 minutes; a reload shows the outcome
  let polls = 0;
  let timer = null;

  const holder = () => document.getElementById("session-quality");

  async function refresh() {
    let html;
    try { html = await Tarsy.fetchText(`/sessions/${sessionId}/fragments/quality`); } catch (e) { return; }
    const target = holder();
    if (!target) return;
    target.replaceChildren(Tarsy.fragment(html));
    follow();
  }

  /** Poll while the score is pending. */
  function follow() {
    clearTimeout(timer);
    const panel = document.getElementById("quality-panel");
    if (panel && panel.dataset.scoreStatus === "pending" && polls < POLL_LIMIT) {
      polls += 1;
      timer = setTimeout(refresh, POLL_MS);
    }
  }

  /** The live header shows the session's status: once it has finished, the panel (review, score) appears. */
  const TERMINAL = ["completed", "failed", "cancelled", "timed_out", "silenced"];
  const header = document.getElementById("session-header");
  let shownFor = (header && header.querySelector("[data-status]") || {dataset: {}}).dataset.status;
  if (header) {
    new MutationObserver(() => {
      const status = (header.querySelector("[data-status]") || {dataset: {}}).dataset.status;
      if (status !== shownFor && TERMINAL.includes(status)) { shownFor = status; polls = 0; refresh(); }
    }).observe(header, {childList: true, subtree: true});
  }

  function show(id, text) {
    const node = document.getElementById(id);
    if (!node) return;
    node.textContent = text;
    node.hidden = !text;
  }

  page.addEventListener("click", async (e) => {
    const button = e.target.closest("#rescore");
    if (!button) return;
    button.disabled = true;
    const result = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/score`);
    if (!result.ok) { show("rescore-error", Tarsy.errorText(result.data)); button.disabled = false; return; }
    polls = 0;
    refresh();
  });

  page.addEventListener("submit", async (e) => {
    if (e.target.id !== "review-form") return;
    e.preventDefault();
    const form = e.target;
    const rating = form.querySelector('input[name="rating"]:checked');
    if (!rating) { show("review-error", "Choose accurate, partially accurate or inaccurate."); return; }
    show("review-error", "");
    const save = document.getElementById("review-save");
    save.disabled = true;
    const result = await Tarsy.api("POST", `/api/v1/sessions/${sessionId}/review`, {
      rating: rating.value, feedback: form.feedback.value, action_taken: form.action_taken.value});
    save.disabled = false;
    if (!result.ok) { show("review-error", Tarsy.errorText(result.data)); return; }
    await refresh();
    show("review-saved", "Saved.");
  });

  window.TarsyQuality = {refresh};  // a review saved from the triage panel's resolve dialog
  follow();
})();
