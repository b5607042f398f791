/* Citations in the final analysis: a link to an evidence event reveals it (selects its agent's tab, opens
   its result), scrolls to it and highlights it for a moment. Alert-field links open the original alert. */
"use strict";

(() => {
  const HIGHLIGHT_MS = 2500;

  function reveal(node) {
    const panel = node.closest('[role="tabpanel"]');
    if (panel && panel.hidden) {
      const tab = document.getElementById(panel.getAttribute("aria-labelledby"));
      if (tab) tab.click();  // the shared tab handler shows the panel
    }
    for (let parent = node.parentElement; parent; parent = parent.parentElement) {
      if (parent.tagName === "DETAILS") parent.open = true;
    }
    const fold = node.querySelector("details");
    if (fold) fold.open = true;
  }

  function highlight(node) {
    node.classList.remove("cite-target");
    void node.offsetWidth;  // restart the animation when the same evidence is cited twice in a row
    node.classList.add("cite-target");
    setTimeout(() => node.classList.remove("cite-target"), HIGHLIGHT_MS);
  }

  document.addEventListener("click", (e) => {
    const alertLink = e.target.closest("a.cite-alert");
    if (alertLink) {
      const box = document.querySelector("details.alert-box");
      if (box) box.open = true;
      return;  // the #alert-data anchor scrolls
    }
    const link = e.target.closest("a.cite[data-cite-event]");
    if (!link) return;
    const node = document.querySelector(`li.ev[data-event-id="${link.dataset.citeEvent}"]`);
    if (!node) return;  // not on this page: the href still points at it
    e.preventDefault();
    reveal(node);
    // An instant scroll, on the next frame: revealing switches a tab and opens the result, and a smooth scroll
    // started before that layout settles (or interrupted by it) can stop short of the evidence.
    requestAnimationFrame(() => node.scrollIntoView({block: "center"}));
    node.focus({preventScroll: true});
    highlight(node);
    history.replaceState(null, "", `#event-${link.dataset.citeEvent}`);
  });
})();
