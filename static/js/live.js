/* Approval Inbox live updates: one websocket per signed-in page; the server sends HTML.

   The page's <body data-live-url> names what it shows (the list with its filters, one item, one run); the
   server renders the fragments that changed for this user (rows, tab counts, claim box, resume state,
   notices) with hx-swap-oob and pushes them, and htmx swaps them in. Nothing is fetched per event and no
   page logic lives here: this file connects, reconnects with capped jittered backoff (asking the server
   for what changed since its last message; the backoff starts over only once a socket has stayed open
   STABLE_MS, so a server that accepts and drops sockets is not hammered, and its cap keeps a reconnect within
   a few seconds of the server's recovery), keeps the user's ticks and selection across swaps, locks the
   form parts the server marks as locked, and stops the countdown of an item the server says is closed. */
(function () {
  "use strict";

  var body = document.body;
  var socket = null;
  var attempts = 0;
  var retryTimer = null;
  var MAX_DELAY = 5000;
  var STABLE_MS = 10000;
  var stableTimer = null;
  var TOAST_MS = 8000;

  function socketUrl() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    return scheme + location.host + body.dataset.liveUrl + "&since=" + encodeURIComponent(body.dataset.liveSince || "");
  }

  // What the user ticked or selected survives the server's fresh copy of the rows.
  function remember() {
    var checked = [];
    document.querySelectorAll("#item-rows input:checked, [data-run-form] [data-run-item] input:checked").forEach(function (input) {
      checked.push([input.name, input.value]);
    });
    var selected = document.querySelector("tr[data-item-row].is-selected");
    var active = document.activeElement;
    var focused = active && active.closest ? active.closest("tr[data-item-row]") : null;
    return {
      checked: checked,
      selected: selected ? selected.dataset.itemId : null,
      focused: focused && active.classList.contains("row-link") ? focused.dataset.itemId : null,
    };
  }

  function restore(state) {
    state.checked.forEach(function (pair) {
      document.querySelectorAll('input[name="' + CSS.escape(pair[0]) + '"]').forEach(function (input) {
        if (input.value === pair[1] && !input.disabled && !input.closest("fieldset:disabled")) input.checked = true;
      });
    });
    if (state.selected) {
      var row = document.querySelector('tr[data-item-row][data-item-id="' + state.selected + '"]');
      if (row) { row.classList.add("is-selected"); row.setAttribute("aria-selected", "true"); }
    }
    if (state.focused) {  // keyboard focus (j/k) survives the swap too
      var link = document.querySelector('tr[data-item-row][data-item-id="' + state.focused + '"] .row-link');
      if (link && document.activeElement !== link) link.focus({ preventScroll: true });
    }
  }

  // Markers rendered by the server: <span data-lock-target="#x" data-locked="true"> disables #x's inputs.
  function applyLocks() {
    document.querySelectorAll("[data-lock-target]").forEach(function (marker) {
      var locked = marker.dataset.locked === "true";
      document.querySelectorAll(marker.dataset.lockTarget).forEach(function (target) {
        if (target.tagName === "FIELDSET") target.disabled = locked;
        else target.querySelectorAll("input, button, select, textarea").forEach(function (el) { el.disabled = locked; });
        if (locked) target.setAttribute("aria-disabled", "true"); else target.removeAttribute("aria-disabled");
      });
    });
  }

  // The item page's own item closed elsewhere (the server pushed its pill, which no longer says Open): its
  // countdown stops and says so, and its form looks and acts decided.
  function closeItem() {
    var pill = document.getElementById("item-status");
    if (!pill || pill.dataset.outcome === "open") return;
    document.querySelectorAll(".item-head .countdown[data-expires]").forEach(function (el) {
      el.removeAttribute("data-expires");
      el.classList.remove("is-soon", "is-urgent", "is-past");
      el.classList.add("is-stopped");
      el.textContent = "no longer open";
    });
    document.querySelectorAll("[data-decision-form], [data-claim-box]").forEach(function (form) {
      form.setAttribute("aria-disabled", "true");
      form.querySelectorAll("button, input, textarea, select").forEach(function (el) { el.disabled = true; });
    });
  }

  function expireToasts() {
    document.querySelectorAll(".live-toast:not([data-shown])").forEach(function (toast) {
      toast.dataset.shown = "1";
      setTimeout(function () { toast.remove(); }, TOAST_MS);
    });
  }

  function apply(html) {
    var state = remember();
    htmx.swap(body, html, { swapStyle: "none" });
    restore(state);
    applyLocks();
    closeItem();
    expireToasts();
    var meta = document.getElementById("live-meta");
    if (meta) {
      if (meta.dataset.cursor) body.dataset.liveSince = meta.dataset.cursor;
      if (meta.dataset.lastEvent) body.dataset.liveLast = meta.dataset.lastEvent;
    }
    // The run page's preview of the RunAgentInput is rendered by the server from the form's choices.
    var form = document.querySelector("[data-run-form]");
    if (form && /id="run-(live|item-)/.test(html)) form.dispatchEvent(new Event("change", { bubbles: true }));
    document.dispatchEvent(new CustomEvent("inbox:live-applied"));
  }

  function connect() {
    var own = new WebSocket(socketUrl());
    socket = own;
    body.dataset.liveAttempts = String(Number(body.dataset.liveAttempts || 0) + 1);
    own.addEventListener("open", function () {
      if (own.retired) return;
      body.dataset.live = "open";
      stableTimer = setTimeout(function () { attempts = 0; }, STABLE_MS);
    });
    own.addEventListener("message", function (event) {
      if (own.retired) return;  // the split view moved to another item: this socket's fragments are of the last one
      try { apply(event.data); } catch (error) { if (window.console) console.warn("live:", error); }
    });
    own.addEventListener("close", function (event) {
      if (own.retired) return;
      body.dataset.live = "closed";
      socket = null;
      clearTimeout(stableTimer);
      if (event.code === 4401 || event.code === 4404) return; // signed out, or this page's object is gone
      // Capped exponential backoff with jitter: 0.5 s, 1 s, 2 s … up to 5 s.
      var ceiling = Math.min(MAX_DELAY, 500 * Math.pow(2, attempts));
      attempts += 1;
      retryTimer = setTimeout(connect, ceiling / 2 + Math.random() * ceiling / 2);
    });
  }

  /* The split view shows another item (split.js): the socket of the last one is retired before the new pane is
     swapped in (a fragment of the old item must not land in the new one), and a socket for what the page shows now
     (body[data-live-url], data-live-since: when the pane was rendered) is opened once it is in. */
  function retire() {
    clearTimeout(retryTimer);
    clearTimeout(stableTimer);
    if (socket) { socket.retired = true; socket.close(); socket = null; }
    body.dataset.live = "closed";
  }

  function follow() {
    applyLocks();
    closeItem();
    if (!window.WebSocket || !window.htmx || !body.dataset.liveUrl) return;
    retire();
    attempts = 0;
    connect();
  }

  /* For tests and the curious: drop the socket as a network failure would. */
  window.inboxLive = {
    drop: function () { if (socket) socket.close(); },
    retire: retire,
  };

  function init() {
    document.addEventListener("inbox:pane-loaded", follow);
    applyLocks();
    closeItem();
    if (!window.WebSocket || !window.htmx || !body.dataset.liveUrl) return;
    connect();
    window.addEventListener("online", function () {
      if (!socket) { clearTimeout(retryTimer); attempts = 0; connect(); }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
