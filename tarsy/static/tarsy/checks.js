/* Checks page: run a check now, add or end a silence through the API, then reload (the server renders and
   escapes every row). */
"use strict";

(() => {
  const page = document.getElementById("checks-page");
  if (!page) return;

  page.addEventListener("click", async (e) => {
    const run = e.target.closest("button.check-run");
    if (run) {
      const out = run.parentElement.querySelector(".check-status");
      const result = await Tarsy.api("POST", `/api/v1/checks/${encodeURIComponent(run.dataset.check)}/run`, {});
      if (!result.ok) { out.textContent = Tarsy.errorText(result.data); return; }
      window.location.href = `/sessions/${result.data.id}`;
      return;
    }
    const end = e.target.closest("button.silence-end");
    if (end) {
      const result = await Tarsy.api("DELETE", `/api/v1/silences/${end.dataset.silenceId}`);
      if (!result.ok) { end.textContent = Tarsy.errorText(result.data); return; }
      window.location.reload();
    }
  });

  page.querySelector("#silence-new").addEventListener("submit", async (e) => {
    e.preventDefault();
    const form = e.target;
    const matchers = {};
    for (const part of form.matchers.value.split(",")) {
      const [key, ...rest] = part.split("=");
      if (key.trim()) matchers[key.trim()] = rest.join("=").trim();
    }
    const ends = new Date(Date.now() + parseFloat(form.hours.value || "0") * 3600 * 1000);
    const body = {alert_type: form.alert_type.value.trim(), matchers, mode: form.mode.value,
                  ends_at: ends.toISOString(), reason: form.reason.value};
    const result = await Tarsy.api("POST", "/api/v1/silences", body);
    if (!result.ok) { form.querySelector(".silence-status").textContent = Tarsy.errorText(result.data); return; }
    window.location.reload();
  });
})();
