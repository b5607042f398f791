/* TARSy dashboard: shared helpers — API calls, the live socket, elapsed timers, tabs, copy buttons. */
"use strict";

const Tarsy = (() => {
  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  async function api(method, url, body) {
    const options = {method, headers: {"Accept": "application/json", "X-CSRFToken": csrf()}, credentials: "same-origin"};
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    return {ok: response.ok, status: response.status, data};
  }

  async function fetchText(url) {
    const response = await fetch(url, {credentials: "same-origin", headers: {"Accept": "text/html"}});
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.text();
  }

  /** Parse server-rendered (already escaped/sanitized) HTML into nodes. */
  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  function errorText(data) {
    if (!data) return "The request failed.";
    const detail = data.detail;
    if (typeof detail === "string") return `${data.error}: ${detail}`;
    return data.error || "The request failed.";
  }

  /** One debounced call per burst of triggers. */
  function debounce(fn, ms) {
    let timer = null;
    return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
  }

  // ---- the live socket ------------------------------------------------------------------------------------
  const PING_MS = 20000;       // keeps idle proxies from closing the socket
  const RETRY_BASE_MS = 200;   // reconnect after 200 ms, doubling up to 3 s
  const RETRY_MAX_MS = 3000;

  class LiveSocket {
    /**
     * channels: {name: cursor}; onEvent(event); onOverflow(channel) when catch-up is too long; seqs: {name:
     * number of the event at the cursor}, where the page knows it.
     *
     * A channel's cursor is the id of the last event taken in order. A session channel numbers its events (`seq`:
     * 1, 2, 3 … in commit order): after n, n+1 is taken, an old number is a copy, and a larger one means events
     * were lost on the way, so the socket asks for what is stored after the cursor and takes nothing past the
     * hole until it is filled. A hole the catch-up cannot fill (rows removed since) reloads, as an overflow does.
     */
    constructor(channels, onEvent, onOverflow, seqs) {
      this.cursors = Object.assign({}, channels);
      this.seqs = Object.assign({}, seqs);  // channel → number of the event at the cursor (else set by the next)
      this.holes = {};    // channel → the number that showed a hole, while its catch-up is under way
      this.onEvent = onEvent;
      this.onOverflow = onOverflow || (() => window.location.reload());
      this.attempt = 0;
      this.connect();
    }

    connect() {
      const scheme = window.location.protocol === "https:" ? "wss" : "ws";
      this.ws = new WebSocket(`${scheme}://${window.location.host}/ws`);
      this.ws.onopen = () => {
        this.attempt = 0;
        this.holes = {};  // the subscriptions below catch up from the cursors
        setConnection(true);
        for (const [channel, cursor] of Object.entries(this.cursors)) {
          this.send({action: "subscribe", channel, last_event_id: cursor});
        }
        clearInterval(this.pinger);
        this.pinger = setInterval(() => this.send({action: "ping"}), PING_MS);
      };
      this.ws.onmessage = (message) => {
        let event;
        try { event = JSON.parse(message.data); } catch (e) { return; }
        if (event.type === "catchup.overflow") { this.onOverflow(event.channel); return; }
        if (event.type === "catchup.done") { this.caughtUp(event.channel); return; }
        if (event.event_id && event.channel in this.cursors && !this.take(event)) return;
        try { this.onEvent(event); } catch (e) { console.warn("event handler failed", e); }
      };
      this.ws.onclose = () => {
        clearInterval(this.pinger);
        setConnection(false);
        const delay = Math.min(RETRY_BASE_MS * 2 ** this.attempt, RETRY_MAX_MS);
        this.attempt += 1;
        setTimeout(() => this.connect(), delay);
      };
    }

    /** Whether a stored event is next on its channel (and moves the cursor to it). */
    take(event) {
      const channel = event.channel;
      if (event.seq === undefined || event.seq === null) {  // unnumbered channel: ids only grow
        if (event.event_id <= this.cursors[channel]) return false;  // already seen (catch-up overlap)
        this.cursors[channel] = event.event_id;
        return true;
      }
      const last = this.seqs[channel];
      if (last !== undefined && event.seq <= last) return false;  // already seen
      if (last !== undefined && event.seq > last + 1) {  // a hole: fill it from the database first
        if (!(channel in this.holes)) {
          this.holes[channel] = event.seq;
          this.send({action: "catchup", channel, last_event_id: this.cursors[channel]});
        }
        return false;
      }
      this.seqs[channel] = event.seq;
      this.cursors[channel] = event.event_id;
      return true;
    }

    caughtUp(channel) {
      const hole = this.holes[channel];
      delete this.holes[channel];
      if (hole !== undefined && this.seqs[channel] < hole - 1) this.onOverflow(channel);  // not stored any more
    }

    send(message) {
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
    }
  }

  function setConnection(up) {
    const badge = document.getElementById("conn");
    if (!badge) return;
    badge.hidden = up;
    badge.textContent = up ? "" : "Reconnecting…";
  }

  // ---- elapsed timers, local times ------------------------------------------------------------------------
  function formatElapsed(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    return h ? `${h}h ${m}m ${s}s` : m ? `${m}m ${s}s` : `${s}s`;
  }

  function tick() {
    const now = Date.now();
    for (const el of document.querySelectorAll("time.elapsed[data-since]")) {
      const since = Date.parse(el.dataset.since);
      if (!Number.isNaN(since)) el.textContent = formatElapsed((now - since) / 1000);
    }
    for (const el of document.querySelectorAll("time.countdown[data-until]")) {  // e.g. an approval's expiry
      const until = Date.parse(el.dataset.until);
      if (Number.isNaN(until)) continue;
      if (!el.title) el.title = new Date(until).toLocaleString();
      el.textContent = until > now ? `in ${formatElapsed((until - now) / 1000)}` : "now (expired)";
      el.classList.toggle("soon", until - now < 5 * 60 * 1000);
    }
  }

  function localTimes(root) {
    for (const el of (root || document).querySelectorAll("time.local-time[datetime]")) {
      const when = new Date(el.getAttribute("datetime"));
      if (!Number.isNaN(when.getTime())) {
        el.title = el.textContent;
        el.textContent = when.toLocaleString();
      }
    }
  }

  // ---- tabs (WAI-ARIA pattern: arrows move, Home/End jump) ------------------------------------------------
  function selectTab(tab) {
    const list = tab.closest('[role="tablist"]');
    for (const other of list.querySelectorAll('[role="tab"]')) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
      const panel = document.getElementById(other.getAttribute("aria-controls"));
      if (panel) panel.hidden = !selected;
    }
  }

  document.addEventListener("click", (e) => {
    const tab = e.target.closest('[role="tab"]');
    if (tab) selectTab(tab);
    const copy = e.target.closest("button.copy[data-copy-target]");
    if (copy) {
      const source = document.getElementById(copy.dataset.copyTarget);
      if (source && navigator.clipboard) {
        navigator.clipboard.writeText(source.innerText).then(() => {
          copy.textContent = "Copied";
          setTimeout(() => { copy.textContent = "Copy"; }, 1500);
        }).catch(() => {});
      }
    }
  });

  document.addEventListener("keydown", (e) => {
    const tab = e.target.closest && e.target.closest('[role="tab"]');
    if (!tab) return;
    const tabs = [...tab.closest('[role="tablist"]').querySelectorAll('[role="tab"]')];
    let index = tabs.indexOf(tab);
    if (e.key === "ArrowRight") index = (index + 1) % tabs.length;
    else if (e.key === "ArrowLeft") index = (index - 1 + tabs.length) % tabs.length;
    else if (e.key === "Home") index = 0;
    else if (e.key === "End") index = tabs.length - 1;
    else return;
    e.preventDefault();
    selectTab(tabs[index]);
    tabs[index].focus();
  });

  document.addEventListener("DOMContentLoaded", () => {
    tick();
    localTimes();
    setInterval(tick, 1000);
  });

  return {api, fetchText, fragment, errorText, debounce, LiveSocket, localTimes, tick, selectTab};
})();
