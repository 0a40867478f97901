/* Approval Inbox live updates: one websocket per signed-in page; the server sends HTML.

   The page's <body data-live-url> names what it shows (the list with its filters, one item, one run); the
   server renders the fragments that changed for this user (rows, tab counts, claim box, resume state,
   notices) with hx-swap-oob and pushes them, and htmx swaps them in. Nothing is fetched per event and no
   page logic lives here. The socket is htmx's ws extension (vendor/htmx-ext-ws) on a hidden element; this file
   gives it the URL at each (re)connect (asking the server for what changed since its last message) and a capped
   jittered backoff that starts over only once a socket has stayed open STABLE_MS (a server that accepts and drops
   sockets is not hammered; the cap keeps a reconnect within a few seconds of the server's recovery), keeps the
   user's ticks, selection and focus across swaps, locks the form parts the server marks as locked, and stops the
   countdown of an item the server says is closed. docs/architecture.md says why the swap is not the extension's. */
(function () {
  "use strict";

  var body = document.body;
  var attempts = 0;
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
  // countdown stops and says so, and its form, claim and snooze controls look and act decided.
  function closeItem() {
    var pill = document.getElementById("item-status");
    if (!pill || pill.dataset.outcome === "open") return;
    document.querySelectorAll(".item-head .countdown[data-expires]").forEach(function (el) {
      el.removeAttribute("data-expires");
      el.classList.remove("is-soon", "is-urgent", "is-past");
      el.classList.add("is-stopped");
      el.textContent = "no longer open";
    });
    // Over means read-only: no deadline left to decide by, and no snoozing what is over.
    document.querySelectorAll(".item-head [data-decide-by]").forEach(function (el) { el.remove(); });
    document.querySelectorAll("[data-decision-form], [data-claim-box], [data-snooze-box]").forEach(function (form) {
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

  /* The socket is htmx's ws extension on a hidden element (ws-connect); the URL is read at every (re)connect so
     it carries the last cursor, and the backoff is ours (reset only once a socket stayed open STABLE_MS). */
  var wrapper = null;  // the extension's handle on the socket (reconnect)
  var current = null;  // the latest socket: a replaced one's late close event says nothing about the page
  var pending = null;  // the socket the extension is opening
  var socketElement = null;

  function reconnectDelay() {
    var ceiling = Math.min(MAX_DELAY, 500 * Math.pow(2, attempts));
    attempts += 1;
    return ceiling / 2 + Math.random() * ceiling / 2;
  }

  // The extension's retry timer may still fire for an element retired meanwhile: its htmx:wsConnecting does not
  // reach the document (the element is out of it), so that socket never becomes ``current`` and closes once open.
  function createSocket() {
    var socket = (pending = new WebSocket(socketUrl()));
    socket.addEventListener("open", function () { if (socket !== current) socket.close(); });
    return socket;
  }

  function connect() {
    // The server's first message says the page is in sync (fresh fragments, or only a cursor): until then the
    // cursor is the last socket's.
    var meta = document.getElementById("live-meta");
    if (meta) meta.removeAttribute("data-cursor");
    var element = document.createElement("div");
    element.hidden = true;
    element.setAttribute("hx-ext", "ws");
    element.setAttribute("ws-connect", body.dataset.liveUrl);
    body.appendChild(element);
    htmx.process(element);
    socketElement = element;
  }

  /* The split view shows another item (split.js): the socket of the last one is retired before the new pane is
     swapped in (a fragment of the old item must not land in the new one; the extension closes the socket of an
     element htmx removes and drops what it still hears), and follow() opens one for what the page shows now
     (body[data-live-url], data-live-since: when the pane was rendered) once it is in. */
  function retire() {
    clearTimeout(stableTimer);
    if (socketElement) htmx.swap(socketElement, "", { swapStyle: "delete", swapDelay: 0, settleDelay: 0 });
    socketElement = wrapper = current = null;
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

  /* For tests and the curious: drop the socket as a network failure would (the extension reconnects). */
  window.inboxLive = {
    drop: function () { if (wrapper) { body.dataset.live = "closed"; wrapper.reconnect(); } },
    retire: retire,
  };

  document.addEventListener("htmx:wsConnecting", function () {
    current = pending;
    body.dataset.liveAttempts = String(Number(body.dataset.liveAttempts || 0) + 1);
  });
  document.addEventListener("htmx:wsOpen", function (event) {
    if (event.detail.event.target !== current) return;
    wrapper = event.detail.socketWrapper;
    body.dataset.live = "open";
    clearTimeout(stableTimer);
    stableTimer = setTimeout(function () { attempts = 0; }, STABLE_MS);
  });
  document.addEventListener("htmx:wsClose", function (event) {
    if (event.detail.event.target !== current) return;
    wrapper = event.detail.socketWrapper;
    body.dataset.live = "closed";
    clearTimeout(stableTimer);
  });
  // The extension's own swap takes each top-level element of a message as out-of-band and so misses the rows,
  // which come inside a <template> (table parts parse nowhere else): the message is swapped here instead.
  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    event.preventDefault();
    if (event.target !== socketElement) return;
    try { apply(event.detail.message); } catch (error) { if (window.console) console.warn("live:", error); }
  });

  function init() {
    document.addEventListener("inbox:pane-loaded", follow);
    applyLocks();
    closeItem();
    if (!window.WebSocket || !window.htmx || !body.dataset.liveUrl) return;
    htmx.createWebSocket = createSocket;
    htmx.config.wsReconnectDelay = reconnectDelay;
    connect();
    window.addEventListener("online", function () {
      if (wrapper && body.dataset.live !== "open") { attempts = 0; wrapper.reconnect(); }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
