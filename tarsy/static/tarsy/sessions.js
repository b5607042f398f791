/* Sessions page: active and queued panels live over the socket; the history table refreshes in place. */
"use strict";

(() => {
  const page = document.getElementById("sessions-page");
  if (!page) return;
  const ACTIVE_POLL_MS = 5000;  // "current phase" changes without a sessions-channel event: poll while busy

  async function reload(fragment, targetId) {
    const params = new URLSearchParams(window.location.search);
    params.set("fragment", fragment);
    let html;
    try { html = await Tarsy.fetchText(`/?${params}`); } catch (e) { return; }
    const target = document.getElementById(targetId);
    target.replaceChildren(Tarsy.fragment(html));
    Tarsy.localTimes(target);
    Tarsy.tick();
  }

  const refreshActive = Tarsy.debounce(() => reload("active", "active-panels"), 100);
  const refreshHistory = Tarsy.debounce(() => reload("history", "history"), 300);

  // A repeat or a related alert joined a session: its counts change in place, wherever the session is shown.
  function showCounts(event) {
    for (const holder of document.querySelectorAll(`[data-session-id="${event.session_id}"] [data-alert-counts]`)) {
      const parts = [];
      if (event.occurrence_count > 1) parts.push(Object.assign(document.createElement("span"), {
        className: "occurrences", textContent: `×${event.occurrence_count} alerts`}));
      if (event.related_count) parts.push(" ", Object.assign(document.createElement("span"), {
        className: "related", textContent: `+${event.related_count} related`}));
      holder.replaceChildren(...parts);
    }
  }

  new Tarsy.LiveSocket({sessions: Number(page.dataset.cursor) || 0}, (event) => {
    if (event.type === "session.status" || event.type === "session.completed") {
      refreshActive();
      refreshHistory();
    } else if (event.type === "session.quality") {
      refreshHistory();  // a score or review landed: its row's columns change
    } else if (event.type === "session.occurrence") {
      showCounts(event);
    }
  });

  setInterval(() => {
    if (!document.hidden && document.querySelector("#running-panel .card")) refreshActive();
  }, ACTIVE_POLL_MS);

  // Filters apply as they change (the URL keeps them, so a reload or a shared link shows the same view).
  const form = document.getElementById("filters");
  form.addEventListener("change", (e) => {
    if (e.target.name === "search") return;
    form.requestSubmit();
  });
  form.addEventListener("submit", () => {
    for (const el of form.elements) {
      if ((el.tagName === "SELECT" || el.type === "search" || el.type === "date") && !el.value) el.disabled = true;
    }
    const size = form.elements.page_size;
    if (size && size.value === "25") size.disabled = true;
    const ordering = form.elements.ordering;
    if (ordering && ordering.value === "-created_at") ordering.disabled = true;
  });
})();
