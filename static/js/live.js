/* Approval Inbox live updates: one websocket (/ws/inbox/) per page, pushes applied to what the page shows.

   The server sends {"event": name, "payload": {...}} for what the user may see (item.created,
   item.decided, item.expired, items.expired, item.reminder, item.claimed, item.vote, comment.added,
   resume.state, item.tool_result). The page marks itself with <body data-live-page="list|item|run|other"
   data-item-id data-run-id>. When the socket drops, it reconnects with capped, jittered backoff and then
   refreshes whatever it may have missed. No framework, no build step. */
(function () {
  "use strict";

  var body = document.body;
  var page = body.dataset.livePage || "other";
  var itemId = body.dataset.itemId ? Number(body.dataset.itemId) : null;
  var runId = body.dataset.runId ? Number(body.dataset.runId) : null;
  var me = null;
  var socket = null;
  var attempts = 0;
  var connectedOnce = false;
  var countsTimer = null;
  var retryTimer = null;
  var MAX_DELAY = 30000;

  var STYLE = [
    "@keyframes live-flash { from { background-color: #fff3b0; } to { background-color: transparent; } }",
    ".live-flash, .live-flash > td { animation: live-flash 2.5s ease-out; }",
    "tr.live-leaving { transition: opacity .4s ease-out; opacity: 0; }",
    "#live-notice:not(:empty) { margin: .5rem 0 1rem; padding: .6rem .9rem; border-radius: 8px;",
    "  background: #eef4ff; border: 1px solid #c9dafc; color: #1d3d7a; }",
    "#live-notice[data-tone=warn]:not(:empty) { background: #fff7e6; border-color: #f5d58b; color: #6b4a00; }",
    ".live-toasts { position: fixed; right: 1rem; bottom: 1rem; display: flex; flex-direction: column; gap: .5rem;",
    "  z-index: 50; max-width: 24rem; }",
    ".live-toast { background: #1f2937; color: #fff; padding: .6rem .9rem; border-radius: 8px;",
    "  box-shadow: 0 4px 16px rgba(0,0,0,.2); font-size: .9rem; }",
    ".live-toast a { color: #bcd4ff; }",
  ].join("\n");

  // --- small helpers --------------------------------------------------------------------------

  function injectStyle() {
    var style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
  }

  function parseHtml(html) {
    return new DOMParser().parseFromString(html, "text/html");
  }

  function fetchText(url) {
    return fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "live" } }).then(function (r) {
      if (!r.ok) throw new Error(url + " answered " + r.status);
      return r.text();
    });
  }

  function flash(el) {
    el.classList.remove("live-flash");
    void el.offsetWidth; // restart the animation
    el.classList.add("live-flash");
  }

  function notice(text, tone) {
    var box = document.getElementById("live-notice");
    if (!box) return toast(text);
    box.textContent = text;
    if (tone) box.dataset.tone = tone; else delete box.dataset.tone;
  }

  function toast(text, href) {
    var stack = document.querySelector(".live-toasts");
    if (!stack) {
      stack = document.createElement("div");
      stack.className = "live-toasts";
      stack.setAttribute("role", "status");
      stack.setAttribute("aria-live", "polite");
      body.appendChild(stack);
    }
    var el = document.createElement("div");
    el.className = "live-toast";
    if (href) {
      var link = document.createElement("a");
      link.href = href;
      link.textContent = text;
      el.appendChild(link);
    } else {
      el.textContent = text;
    }
    stack.appendChild(el);
    setTimeout(function () { el.remove(); }, 8000);
  }

  function setStatusPills(pk, status) {
    var label = status.charAt(0).toUpperCase() + status.slice(1);
    document.querySelectorAll('[data-item-status="' + pk + '"]').forEach(function (pill) {
      pill.textContent = label;
      pill.className = pill.className.replace(/\bpill-(open|resolved|cancelled|expired)\b/, "pill-" + status);
      flash(pill);
    });
  }

  function disableForms(selector) {
    document.querySelectorAll(selector).forEach(function (form) {
      form.querySelectorAll("input, button, textarea, select").forEach(function (el) { el.disabled = true; });
      form.setAttribute("aria-disabled", "true");
      form.dataset.liveClosed = "true";
    });
  }

  function byWhom(payload) {
    var who = payload.decidedBy;
    if (!who) return "";
    return who === me ? "you (in another window)" : who;
  }

  function outcomeText(event, payload) {
    if (event === "item.expired") return "Expired" + (payload.note ? ": " + payload.note : "") + ".";
    var how = payload.status === "cancelled" ? "Cancelled" : "Decided";
    var who = byWhom(payload);
    return who ? how + " by " + who + "." : how + ".";
  }

  // --- the list page ----------------------------------------------------------------------------

  function rowsBody() { return document.getElementById("item-rows"); }

  function listQuery() {
    var tbody = rowsBody();
    return new URLSearchParams((tbody && tbody.dataset.sourceUrl) || "");
  }

  function listSort(query) {
    var sort = query.get("sort");
    if (sort) return sort;
    return ["open", "mine"].indexOf(query.get("tab") || "open") >= 0 ? "expires" : "newest";
  }

  function expiresOf(row) {
    var time = row.querySelector("[data-expires]");
    return time ? Date.parse(time.dataset.expires) : Infinity;
  }

  function placeRow(tbody, row) {
    var existing = tbody.querySelector('tr[data-item-id="' + row.dataset.itemId + '"]');
    if (existing) {
      // Keep the row's bulk selection across the refresh.
      var was = existing.querySelector("input[data-bulk-select]");
      var now = row.querySelector("input[data-bulk-select]:not([disabled])");
      if (was && was.checked && now) now.checked = true;
      existing.replaceWith(row);
      return;
    }
    var query = listQuery();
    if (listSort(query) === "expires") {
      var mine = expiresOf(row);
      var before = Array.prototype.find.call(tbody.querySelectorAll("tr[data-item-row]"), function (other) {
        return expiresOf(other) > mine;
      });
      tbody.insertBefore(row, before || null);
    } else {
      tbody.insertBefore(row, tbody.firstElementChild);
    }
    var empty = document.querySelector("[data-empty-state]");
    if (empty) empty.hidden = true;
  }

  /* Ask the server for the row as the current filters would show it: it comes back if the item belongs
     in this list (inserted or replaced), and not at all if it no longer does (removed). */
  function refreshRows(ids) {
    var tbody = rowsBody();
    if (!tbody || !ids.length) return Promise.resolve();
    var query = listQuery();
    query.set("ids", ids.join(","));
    return fetchText("/inbox/rows/?" + query.toString()).then(function (html) {
      var holder = document.createElement("tbody");
      holder.innerHTML = html;
      var fresh = {};
      holder.querySelectorAll("tr[data-item-row]").forEach(function (row) { fresh[row.dataset.itemId] = row; });
      ids.forEach(function (id) {
        var row = fresh[String(id)];
        var current = tbody.querySelector('tr[data-item-id="' + id + '"]');
        if (row) {
          placeRow(tbody, row);
          flash(row);
        } else if (current) {
          current.classList.add("live-leaving");
          current.dataset.status = "leaving";
          setTimeout(function () { current.remove(); }, 400);
        }
      });
      scheduleCounts();
    });
  }

  function scheduleCounts() {
    clearTimeout(countsTimer);
    countsTimer = setTimeout(refreshCounts, 250);
  }

  /* The tab counts depend on the filters; the list page itself is their source of truth. */
  function refreshCounts(withRows) {
    var query = listQuery();
    return fetchText(location.pathname + "?" + query.toString()).then(function (html) {
      var doc = parseHtml(html);
      doc.querySelectorAll("[data-count]").forEach(function (fresh) {
        var here = document.querySelector('[data-count="' + fresh.dataset.count + '"]');
        if (here && here.textContent !== fresh.textContent) {
          here.textContent = fresh.textContent;
          flash(here);
        }
      });
      if (withRows) {
        var tbody = rowsBody();
        var freshBody = doc.getElementById("item-rows");
        if (tbody && freshBody) {
          var known = {};
          tbody.querySelectorAll("tr[data-item-row]").forEach(function (row) { known[row.dataset.itemId] = true; });
          tbody.innerHTML = freshBody.innerHTML;
          tbody.querySelectorAll("tr[data-item-row]").forEach(function (row) {
            if (!known[row.dataset.itemId]) flash(row);
          });
          var empty = document.querySelector("[data-empty-state]");
          if (empty) empty.hidden = tbody.querySelector("tr[data-item-row]") !== null;
        }
      }
    });
  }

  function onList(event, payload) {
    if (event === "items.expired") return refreshCounts(true);
    if (event === "item.reminder") {
      var row = document.querySelector('tr[data-item-id="' + payload.item + '"]');
      if (row) flash(row);
      return toast("Reminder: " + payload.message, "/inbox/items/" + payload.item + "/");
    }
    if (["item.created", "item.decided", "item.expired", "item.claimed"].indexOf(event) >= 0 && payload.item) {
      return refreshRows([payload.item]);
    }
  }

  // --- the item page ------------------------------------------------------------------------------

  function onItem(event, payload) {
    if (payload.item !== itemId) {
      if ((event === "item.decided" || event === "item.expired") && payload.run === runId) {
        setStatusPills(payload.item, event === "item.expired" ? "expired" : payload.status);
      }
      return;
    }
    if (event === "item.decided" || event === "item.expired") {
      setStatusPills(itemId, event === "item.expired" ? "expired" : payload.status);
      disableForms("[data-decision-form]");
      notice(outcomeText(event, payload) + " Reload to see the outcome.", "warn");
    } else if (event === "item.reminder") {
      notice("Reminder: " + payload.message, "warn");
    } else if (event === "item.claimed") {
      notice(payload.claimedBy ? "Claimed by " + (payload.claimedBy === me ? "you" : payload.claimedBy) + "." : "Released: no one holds this item now.");
      return refreshTeam();
    } else if (event === "item.vote") {
      notice(payload.by + " approved (" + payload.approvals + " of " + payload.required + " approvals).");
      return refreshTeam();
    } else if (event === "comment.added") {
      return refreshComments(payload.by !== me);
    } else if (event === "item.tool_result") {
      notice("The tool ran and its result arrived. Reload to see it.");
    }
  }

  /* Who holds the item and the quorum so far, from a fresh copy of the page. The decision form itself is
     not replaced (it may hold a half-typed answer or a schema widget): it is locked or unlocked in place. */
  function refreshTeam() {
    var form = document.querySelector("[data-decision-form]");
    if (!form || form.dataset.liveClosed) return Promise.resolve();
    return fetchText(location.pathname).then(function (html) {
      var doc = parseHtml(html);
      var freshForm = doc.querySelector("[data-decision-form]");
      if (!freshForm) return refreshItem();
      ["[data-claim-box]", "[data-quorum]", "[data-quorum-hint]"].forEach(function (selector) {
        var here = document.querySelector(selector);
        var fresh = doc.querySelector(selector);
        if (here && fresh && here.outerHTML !== fresh.outerHTML) { here.replaceWith(fresh); flash(fresh); }
      });
      form.querySelectorAll("[data-claim-lock], [data-claim-override]").forEach(function (el) { el.remove(); });
      var fieldset = form.querySelector(".decision-fieldset");
      var freshFieldset = freshForm.querySelector(".decision-fieldset");
      var alert = freshForm.querySelector("[data-claim-lock], [data-claim-override]");
      if (fieldset && alert) { fieldset.before(alert); flash(alert); }
      if (fieldset && freshFieldset) {
        fieldset.disabled = freshFieldset.disabled;
        if (fieldset.disabled) fieldset.setAttribute("aria-disabled", "true"); else fieldset.removeAttribute("aria-disabled");
      }
    });
  }

  /* The discussion thread (item or run page); the comment box keeps what is being typed. */
  function refreshComments(highlight) {
    if (!document.querySelector("[data-comments]")) return Promise.resolve();
    return fetchText(location.pathname).then(function (html) {
      var doc = parseHtml(html);
      ["#discussion .card-title", "[data-comments]"].forEach(function (selector) {
        var here = document.querySelector(selector);
        var fresh = doc.querySelector(selector);
        if (here && fresh) here.replaceWith(fresh);
      });
      var last = document.querySelector("[data-comments] li:last-child");
      if (highlight && last) flash(last);
    });
  }

  /* After a reconnect: if the item was closed meanwhile, say so and lock the form. */
  function refreshItem() {
    if (!document.querySelector("[data-decision-form]")) return Promise.resolve();
    return fetchText(location.pathname).then(function (html) {
      var doc = parseHtml(html);
      if (doc.querySelector("[data-decision-form]")) return;
      var pill = doc.querySelector('[data-item-status="' + itemId + '"]');
      var head = doc.querySelector(".outcome-head");
      var status = pill ? pill.textContent.trim().toLowerCase() : "decided";
      setStatusPills(itemId, status);
      disableForms("[data-decision-form]");
      var who = head ? head.querySelector("strong") : null;
      var text = status === "expired" ? "Expired." : (status === "cancelled" ? "Cancelled" : "Decided") +
        (who ? " by " + who.textContent.trim() : "") + ".";
      notice(text + " Reload to see the outcome.", "warn");
    });
  }

  // --- the run page -------------------------------------------------------------------------------

  function refreshRunLive() {
    if (!runId) return Promise.resolve();
    return fetchText("/inbox/runs/" + runId + "/live/").then(function (html) {
      var here = document.querySelector("[data-run-live]");
      var fresh = parseHtml(html).querySelector("[data-run-live]");
      if (!here || !fresh) return;
      var before = here.querySelector("#resume-state");
      here.replaceWith(fresh);
      var after = fresh.querySelector("#resume-state");
      if (after && (!before || before.dataset.resumeState !== after.dataset.resumeState)) flash(after);
      var events = fresh.querySelector("#resumed-events");
      if (events && events.children.length) flash(events);
      // The statuses shown in the form follow the fragment's.
      fresh.querySelectorAll("[data-item-status]").forEach(function (pill) {
        document.querySelectorAll('[data-run-item="' + pill.dataset.itemStatus + '"] [data-item-status]').forEach(function (other) {
          if (other.textContent !== pill.textContent) {
            other.textContent = pill.textContent;
            other.className = pill.className;
            flash(other);
          }
        });
        if (!/pill-open\b/.test(pill.className)) {
          disableForms('[data-run-item="' + pill.dataset.itemStatus + '"]');
        }
      });
    });
  }

  // One interrupt's row of the run form, fresh from the server (who holds it, whether this user may choose).
  function refreshRunItem(itemPk) {
    if (!runId) return Promise.resolve();
    return fetchText("/inbox/runs/" + runId + "/").then(function (html) {
      var selector = '[data-run-item="' + itemPk + '"]';
      var here = document.querySelector(selector);
      var fresh = parseHtml(html).querySelector(selector);
      if (!here || !fresh) return;
      here.replaceWith(fresh);
      flash(fresh);
      var form = document.querySelector("[data-run-form]");
      if (form) form.dispatchEvent(new Event("change"));
    });
  }

  function onRun(event, payload) {
    if (payload.run !== runId) return;
    if (event === "item.decided" || event === "item.expired") {
      if (!(event === "item.decided" && payload.decidedBy === me)) {
        notice(outcomeText(event, payload).replace(/\.$/, "") + " — interrupt " + payload.item + ".",
               event === "item.expired" ? "warn" : "");
      }
      return refreshRunLive();
    }
    if (event === "resume.state" || event === "item.tool_result" || event === "item.created") return refreshRunLive();
    if (event === "item.claimed") {
      if (payload.claimedBy !== me) {
        var li = document.querySelector('[data-run-item="' + payload.item + '"]');
        var name = li ? li.dataset.interruptId : "interrupt " + payload.item;
        notice(payload.claimedBy ? payload.claimedBy + " is on " + name + ": only they decide it." :
               name + " was released: anyone may decide it.");
      }
      return refreshRunItem(payload.item);
    }
    if (event === "comment.added" && !payload.item) return refreshComments(payload.by !== me);
    if (event === "item.reminder") notice("Reminder: " + payload.message, "warn");
  }

  // --- the socket ---------------------------------------------------------------------------------

  function handle(message) {
    var event = message.event;
    var payload = message.payload || {};
    if (event === "hello") { me = payload.user; return; }
    if (event === "error") { if (window.console) console.warn("live:", payload.field, payload.message); return; }
    body.dataset.liveLast = event;
    var done;
    if (page === "list") done = onList(event, payload);
    else if (page === "item") done = onItem(event, payload);
    else if (page === "run") done = onRun(event, payload);
    else if (event === "item.reminder") toast("Reminder: " + payload.message, "/inbox/items/" + payload.item + "/");
    if (done && done.catch) done.catch(function (error) { if (window.console) console.warn("live:", error); });
  }

  /* What the page may have missed while the socket was down. */
  function refreshMissed() {
    var done;
    if (page === "list") done = refreshCounts(true);
    else if (page === "item") done = refreshItem();
    else if (page === "run") done = refreshRunLive();
    if (done && done.catch) done.catch(function () { /* the next reconnect tries again */ });
  }

  function send(data) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(data));
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/inbox/");
    socket.addEventListener("open", function () {
      body.dataset.live = "open";
      attempts = 0;
      if (itemId) send({ subscribe: { item: itemId } });
      if (runId) send({ subscribe: { run: runId } });
      if (connectedOnce) refreshMissed();
      connectedOnce = true;
    });
    socket.addEventListener("message", function (event) {
      try { handle(JSON.parse(event.data)); } catch (error) { if (window.console) console.warn("live:", error); }
    });
    socket.addEventListener("close", function () {
      body.dataset.live = "closed";
      socket = null;
      // Capped exponential backoff with jitter: 0.5 s, 1 s, 2 s … up to 30 s.
      var ceiling = Math.min(MAX_DELAY, 500 * Math.pow(2, attempts));
      attempts += 1;
      retryTimer = setTimeout(connect, ceiling / 2 + Math.random() * ceiling / 2);
    });
  }

  /* For tests and the curious: drop the socket as a network failure would. */
  window.inboxLive = {
    drop: function () { if (socket) socket.close(); },
    state: function () { return socket ? socket.readyState : -1; },
  };

  function init() {
    // Only signed-in pages have someone to push to (the login page has no user box).
    if (!window.WebSocket || !document.querySelector(".userbox")) return;
    injectStyle();
    connect();
    window.addEventListener("online", function () {
      if (!socket) { clearTimeout(retryTimer); attempts = 0; connect(); }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
