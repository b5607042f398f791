/* Trace view: expand or collapse every entry at once. */
"use strict";

document.addEventListener("click", (e) => {
  const button = e.target.closest("button[data-expand]");
  if (!button) return;
  const open = button.dataset.expand === "all";
  for (const details of document.querySelectorAll("main details")) details.open = open;
});
