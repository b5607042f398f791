/* A session's state outside the page: the browser tab's title and favicon show whether it is queued, running
   or finished, and a watched session raises a browser notification when it finishes (opt-in per session,
   remembered in this browser). session.js calls TarsySessionState.show() for every status it receives. */
"use strict";

window.TarsySessionState = (() => {
  const TERMINAL = new Set(["completed", "failed", "cancelled", "timed_out", "silenced"]);
  const MARK = {pending: "◌", in_progress: "●", cancelling: "●", completed: "✓", failed: "✗", timed_out: "✗",
                cancelled: "⊘", silenced: "⊘"};
  const COLOR = {pending: "#8a8f98", in_progress: "#0d6efd", cancelling: "#c98a00", completed: "#1f9d55",
                 failed: "#d64545", timed_out: "#d64545", cancelled: "#8a8f98", silenced: "#6d28d9"};
  const WORD = {pending: "queued", in_progress: "running", cancelling: "cancelling", completed: "completed",
                failed: "failed", timed_out: "timed out", cancelled: "cancelled", silenced: "silenced"};
  const baseTitle = document.title;
  let sessionId = null;
  let current = null;

  const watchKey = () => `tarsy.watch.${sessionId}`;
  const watched = () => { try { return localStorage.getItem(watchKey()) === "1"; } catch (e) { return false; } };
  function setWatched(on) {
    try { on ? localStorage.setItem(watchKey(), "1") : localStorage.removeItem(watchKey()); } catch (e) { /* private mode */ }
  }

  /** A filled dot while queued or finished, a ring while running: visible at 16 px in a crowded tab bar. */
  function faviconFor(status) {
    const color = COLOR[status] || COLOR.pending;
    const shape = status === "in_progress" || status === "cancelling"
      ? `<circle cx="8" cy="8" r="5.5" fill="none" stroke="${color}" stroke-width="3"/>`
      : `<circle cx="8" cy="8" r="7" fill="${color}"/>`;
    return "data:image/svg+xml," + encodeURIComponent(
      `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">${shape}</svg>`);
  }

  function setFavicon(status) {
    let link = document.querySelector('link[rel="icon"]');
    if (!link) {
      link = document.createElement("link");
      link.rel = "icon";
      document.head.append(link);
    }
    link.type = "image/svg+xml";
    link.href = faviconFor(status);
    link.dataset.status = status;
  }

  function updateButton() {
    const button = document.getElementById("watch-session");
    if (!button) return;
    button.hidden = !("Notification" in window) || TERMINAL.has(current);
    const on = watched() && Notification.permission === "granted";
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.textContent = on ? "Notification on: stop" : "Notify me when it finishes";
  }

  function notify(status, message) {
    if (!watched() || !("Notification" in window) || Notification.permission !== "granted") return;
    setWatched(false);
    const summary = (message && message.executive_summary) || (message && message.error_message) || "";
    const note = new Notification(`TARSy: ${baseTitle.replace(/ · TARSy$/, "")} ${WORD[status] || status}`, {
      body: summary.length > 240 ? summary.slice(0, 239) + "…" : summary,
      tag: `tarsy-session-${sessionId}`,
      icon: faviconFor(status),
    });
    note.onclick = () => { window.focus(); note.close(); };
  }

  /** The status the page now shows; `message` is the live event that carried it, if any. */
  function show(status, message) {
    const finishing = message && TERMINAL.has(status) && !TERMINAL.has(current);
    current = status;
    document.title = `${MARK[status] || ""} ${baseTitle}`.trim();
    setFavicon(status);
    if (finishing) notify(status, message);
    updateButton();
  }

  async function toggleWatch() {
    if (watched() && Notification.permission === "granted") {
      setWatched(false);
    } else {
      const permission = Notification.permission === "default" ? await Notification.requestPermission()
        : Notification.permission;
      setWatched(permission === "granted");
      const error = document.getElementById("watch-error");
      if (error) {
        error.hidden = permission === "granted";
        error.textContent = permission === "granted" ? "" : "The browser blocks notifications from this site.";
      }
    }
    updateButton();
  }

  function start(id, status) {
    sessionId = id;
    show(status, null);
    const button = document.getElementById("watch-session");
    if (button) button.addEventListener("click", toggleWatch);
  }

  return {start, show, faviconFor};
})();
