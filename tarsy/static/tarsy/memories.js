/* Memory page: save a memory's corrected text, approve a memory waiting for review, retire a memory or reactivate
   a retired one (with a reason) through the API, then reload the page (the server renders and escapes every memory
   and its history). */
"use strict";

(() => {
  const page = document.getElementById("memories-page");
  if (!page) return;

  function status(id, text) {
    const target = page.querySelector(`#memory-${id} .memory-status`);
    if (target) target.textContent = text;
  }

  page.addEventListener("submit", async (e) => {
    const back = e.target.closest("form.memory-reactivate");
    if (back) {
      e.preventDefault();
      const id = back.dataset.memoryId;
      const result = await Tarsy.api("POST", `/api/v1/memories/${id}/reactivate`, {reason: back.reason.value});
      if (!result.ok) { status(id, Tarsy.errorText(result.data)); return; }
      window.location.reload();
      return;
    }
    const form = e.target.closest("form.memory-edit");
    if (!form) return;
    e.preventDefault();
    const id = form.dataset.memoryId;
    const result = await Tarsy.api("PATCH", `/api/v1/memories/${id}`, {text: form.text.value});
    if (!result.ok) { status(id, Tarsy.errorText(result.data)); return; }
    status(id, "Saved.");
    window.location.reload();
  });

  page.addEventListener("click", async (e) => {
    const button = e.target.closest("button.memory-retire, button.memory-approve");
    if (!button) return;
    const id = button.dataset.memoryId;
    const result = button.classList.contains("memory-approve")
      ? await Tarsy.api("PATCH", `/api/v1/memories/${id}`, {state: "active"})
      : await Tarsy.api("POST", `/api/v1/memories/${id}/retire`, {});
    if (!result.ok) { status(id, Tarsy.errorText(result.data)); return; }
    window.location.reload();
  });
})();
