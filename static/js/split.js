/* The list's split view on wide screens: the list on the left, the selected item on the right, the address bar
   following the selection (/inbox/?<filters>&item=<id>: back, forward, reload and a shared link show the same).

   The pane is the item page's own body: the server renders it for a request that names #split-pane
   (HX-Target, web/pages.item_page), and htmx swaps it in. Opening an item, deciding it (the decision, claim
   and comment forms post as they would on the item page; the redirect that follows answers with the next item's
   pane) and moving on never load a page. The next item's pane is fetched ahead while the current one is read.
   The page's socket follows the item shown (live.js). Below the breakpoint (the same width as list.css's) the
   list is the page and an item opens as its page, as on a phone. A link to an item from elsewhere (a mail, the
   run page) comes here on a wide screen (to_split.js); the pane's "Open as a page" (?full) is the item page. */
(function () {
  "use strict";

  var pane = document.getElementById("split-pane");
  if (!pane || !window.htmx) return;

  var WIDE = window.matchMedia("(min-width: 1100px)");
  var ITEM = /^\/inbox\/items\/(\d+)\/$/;
  var ITEM_FORM = /^\/inbox\/(items\/\d+\/(decide|claim|release|assign|comments|snooze|unsnooze)|undo)\/$/;
  var PREFETCH_MS = 30000;  // a pane fetched ahead is shown within this; an older one is fetched again
  var body = document.body;
  var listPath = location.pathname;
  var socketPath = (body.dataset.liveUrl || "").split("?")[0];
  var ahead = {};  // path -> {at, promise}: panes fetched ahead
  var showing = 0;  // the latest request for the pane; an answer to an older one is dropped

  function active() { return WIDE.matches; }

  function paneRequest(url, init) {
    init = init || {};
    init.credentials = "same-origin";
    init.headers = Object.assign({ "HX-Request": "true", "HX-Target": "split-pane", "HX-Current-URL": location.href }, init.headers);
    return fetch(url, init).then(function (response) {
      return response.text().then(function (html) {
        return { html: html, status: response.status, url: response.url, next: response.headers.get("X-Pane-Next") };
      });
    });
  }

  function fetchAhead(href) {
    var url = new URL(href, location.href);
    if (!ITEM.test(url.pathname) || ahead[url.pathname]) return;
    // Fetched ahead, not shown: the server records the item as seen only when the pane is (seen()).
    var entry = { at: Date.now(), promise: paneRequest(url.pathname, { headers: { "X-Pane-Prefetch": "1" } }) };
    entry.promise.catch(function () { delete ahead[url.pathname]; });
    ahead[url.pathname] = entry;
  }

  function takeAhead(url) {
    var entry = ahead[url.pathname];
    delete ahead[url.pathname];
    if (!entry || url.search || Date.now() - entry.at > PREFETCH_MS) return null;
    seen(url.pathname);
    return entry.promise;
  }

  // A pane fetched ahead is shown now: the item counts as seen from this moment (review quality).
  function seen(path) {
    var headers = {};
    try { headers = JSON.parse(body.getAttribute("hx-headers") || "{}"); } catch (error) { headers = {}; }
    fetch(path + "seen/", { method: "POST", credentials: "same-origin", headers: headers }).catch(function () {});
  }

  function root() { return pane.querySelector("[data-pane-item]"); }

  /* The row of the item shown is marked. An item just shown also takes the list's keyboard selection (a click, a
     link, moving on after a decision), unless the user has moved it on since (j / k: that item is on its way):
     a live update redraws the rows (live.js keeps their selection) and marks the row again, selecting it only where
     no row is selected any more: the selection must not jump back under the user's keys, or x would tick an item
     they did not choose. */
  function markRow(live) {
    var shown = root();
    var select = live ? Inbox.selectedIndex() < 0 : !moveTimer;
    Inbox.rows().forEach(function (row, index) {
      var on = Boolean(shown) && row.dataset.itemId === shown.dataset.itemId;
      row.classList.toggle("is-shown", on);
      if (on && select && Inbox.selectedIndex() !== index) {
        Inbox.rows().forEach(function (other) { other.classList.remove("is-selected"); other.setAttribute("aria-selected", "false"); });
        row.classList.add("is-selected");
        row.setAttribute("aria-selected", "true");
      }
    });
  }

  // The row of the item shown stays in the list's view (the list scrolls on its own; the page does not).
  function rowInSight() {
    var row = document.querySelector("tr[data-item-row].is-shown");
    var list = row && row.closest(".split-list");
    if (!list) return;
    var box = row.getBoundingClientRect();
    var view = list.getBoundingClientRect();
    if (box.top < view.top) list.scrollTop -= view.top - box.top + 8;
    else if (box.bottom > view.bottom) list.scrollTop += box.bottom - view.bottom + 8;
  }

  /* The pane's item is in: the address, the title, the socket, the next item fetched ahead. */
  function settled(how) {
    var shown = root();
    if (!shown) return;
    var state = { split: shown.dataset.itemId };
    if (how.push && location.pathname + location.search !== shown.dataset.splitUrl) history.pushState(state, "", shown.dataset.splitUrl);
    else history.replaceState(state, "", shown.dataset.splitUrl);
    document.title = shown.dataset.title + " · Approval Inbox";
    body.dataset.liveUrl = socketPath + "?" + shown.dataset.liveQuery;
    body.dataset.liveSince = shown.dataset.renderedAt;
    markRow();
    rowInSight();
    document.dispatchEvent(new CustomEvent("inbox:pane-loaded", { detail: { item: shown.dataset.itemId } }));
    if (how.focus) {
      var heading = pane.querySelector("#item-heading");
      if (heading) heading.focus({ preventScroll: true });
    }
    var next = pane.querySelector("[data-triage-next]");
    if (next) fetchAhead(next.href);
  }

  // A refused decision (400, 409) answers with the pane and its error, shown as the item page shows it.
  function show(result, how, ticket) {
    if (ticket !== showing) return;
    pane.removeAttribute("aria-busy");
    var isPane = /\sdata-pane-item[\s>]/.test(result.html);
    // An answer that is no pane (signed out, a server error page) or an item whose form the browser draws with
    // its own scripts (django-jsonform): the page itself, loaded.
    if (!isPane || /\sdata-needs-page[\s>]/.test(result.html)) {
      // The first item opened by itself, as the list loads, is not worth leaving the list for: the pane stays
      // empty ("Select an item") and the row opens the page when chosen.
      if (how.auto) return;
      var path = result.url ? new URL(result.url).pathname : "";
      window.location.assign(ITEM.test(path) ? splitUrlOf(result.url) : path === listPath ? result.url : location.href);
      return;
    }
    if (window.inboxLive) window.inboxLive.retire();
    htmx.swap(pane, result.html, { swapStyle: "innerHTML", swapDelay: 0, settleDelay: 0 });
    pane.scrollTop = 0;
    // Moved on after a decision: the words of the decision, and the run its socket watches (the chain).
    var shown = root();
    if (how.after) words(shown, how.said || "");
    else if (pageToast()) dropToasts(shown);
    if (how.after && !/(^|&)after=/.test(shown.dataset.liveQuery)) shown.dataset.liveQuery += "&after=" + how.after + "&chain=1";
    settled(how);
  }

  /* The words of the decision just made (and its Undo) above the pane it moved on to; an Undo the pane was fetched
     with (a decision before it) is superseded, and goes. */
  function words(shown, html) {
    dropToasts(shown);
    if (html.trim()) shown.insertAdjacentHTML("afterbegin", html);
  }

  function dropToasts(shown) {
    shown.querySelectorAll("[data-undo-toast]").forEach(function (toast) {
      var stack = toast.parentNode;
      toast.remove();
      if (stack && !stack.children.length) stack.remove();
    });
  }

  /* The Undo toast the page drew above the list as it loaded (base.html): a pane shown beside it, which the server
     draws with the same toast, does not repeat it. */
  function pageToast() {
    return Array.prototype.some.call(document.querySelectorAll("[data-undo-toast]"), function (toast) {
      return !pane.contains(toast);
    });
  }

  function splitUrlOf(itemUrl) {
    var match = ITEM.exec(new URL(itemUrl, location.href).pathname);
    var query = new URLSearchParams(location.search);
    query.set("item", match[1]);
    return listPath + "?" + query.toString();
  }

  function failed(ticket) {
    if (ticket !== showing) return;
    pane.removeAttribute("aria-busy");
    if (window.InboxKeys) window.InboxKeys.say("The item could not be loaded. Check the connection and try again.");
  }

  /* Show the item at ``href`` (an item page's URL) in the pane. how: {push, focus}. */
  function open(href, how) {
    var url = new URL(href, location.href);
    var ticket = ++showing;
    pane.setAttribute("aria-busy", "true");
    var answer = takeAhead(url) || paneRequest(url.pathname + url.search);
    answer.then(function (result) { show(result, how, ticket); }, function () { failed(ticket); });
  }

  /* A decision that moves on (Approve, Deny, Cancel with "Then go to the next open item" on) to a pane fetched
     ahead: that pane is shown at once, and the decision is sent behind it (X-Pane-Shown names what is shown). Its
     answer is the words of the decision (the Undo toast), put above the pane then shown; a refused decision (400,
     409: expired, decided elsewhere, claimed) or one that did not close the item brings the item back with the
     server's words. An approval of an item that needs several approvers, and an answer typed in (edits, a form,
     words), wait for the server: they may stay on the item or be refused for what was typed. */
  var MOVES_ON = { approve: true, deny: true, cancel: true };

  function movesOn(form, data, shown) {
    if (!/\/decide\/$/.test(form.getAttribute("action") || "") || data.get("then") !== "next") return false;
    var action = data.get("action");
    if (!MOVES_ON[action]) return false;
    return !(action === "approve" && shown.querySelector("[data-quorum]"));
  }

  function decideAhead(action, data, shown, nextPath) {
    var entry = ahead[nextPath];
    delete ahead[nextPath];
    seen(nextPath);
    var decided = shown.dataset.itemId;
    var ticket = ++showing;
    var how = { push: true, focus: true, after: shown.dataset.runId };
    var moved = entry.promise.then(function (following) { show(following, how, ticket); });
    moved.catch(function () { failed(ticket); });
    var sent = paneRequest(action.pathname, { method: "POST", body: data, headers: { "X-Pane-Shown": ITEM.exec(nextPath)[1] } });
    sent.then(function (result) {
      if (result.next) {  // decided: its words (and Undo) above the pane on screen, once the pane moved on is in
        moved.then(function () {
          var now = root();
          if (!now) return;
          words(now, result.html);
          document.dispatchEvent(new CustomEvent("inbox:pane-words"));
        }, function () { /* the pane moved on to did not load: failed() said so */ });
        return;
      }
      // Refused, or not closed (the server answers with the item's pane and why): the item is back, whatever
      // is shown meanwhile, since the decision it showed as made was not.
      show(result, { push: true, focus: true }, ++showing);
    }, function () {
      open("/inbox/items/" + decided + "/", { push: true, focus: true });
      if (window.InboxKeys) window.InboxKeys.say("The decision could not be sent. Check the connection: the item is shown again.");
    });
  }

  function submit(event) {
    var form = event.target;
    // getAttribute: the decision form's buttons are named "action", which form.action would return.
    if (!active() || (form.getAttribute("method") || "").toLowerCase() !== "post") return;
    var action = new URL(form.getAttribute("action") || "", location.href);
    // The pane's forms (its Undo toast's too: it brings the item back beside the list).
    if (!pane.contains(form) || !ITEM_FORM.test(action.pathname)) return;
    event.preventDefault();
    var shown = root();
    var before = shown && shown.dataset.itemId;
    var data = new FormData(form, event.submitter);
    // The next item's pane, if it is here already: shown now (a decision that moves on), or the server answers
    // with where to go rather than the pane.
    var next = pane.querySelector("[data-triage-next]");
    var nextPath = next ? new URL(next.href, location.href).pathname : "";
    var fresh = ahead[nextPath] && Date.now() - ahead[nextPath].at <= PREFETCH_MS;
    if (fresh && shown && movesOn(form, data, shown)) { decideAhead(action, data, shown, nextPath); return; }
    var ticket = ++showing;
    pane.setAttribute("aria-busy", "true");
    var headers = fresh ? { "X-Pane-Ahead": ITEM.exec(nextPath)[1] } : {};
    paneRequest(action.pathname, { method: "POST", body: data, headers: headers }).then(function (result) {
      if (!result.next) {
        var moved = /data-pane-item[^>]*data-item-id="(\d+)"/.exec(result.html);
        show(result, { push: Boolean(moved) && moved[1] !== before, focus: true }, ticket);
        return;
      }
      var nextUrl = new URL(result.next, location.href);
      var entry = ahead[nextUrl.pathname];
      delete ahead[nextUrl.pathname];
      var how = { push: true, focus: true, said: result.html, after: nextUrl.searchParams.get("after") };
      (entry ? entry.promise : paneRequest(result.next)).then(function (following) { show(following, how, ticket); }, function () { failed(ticket); });
    }, function () { failed(ticket); });
  }

  function click(event) {
    if (!active() || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || link.target || link.hasAttribute("download")) return;
    var url = new URL(link.href, location.href);
    // ?full: the pane's "Open as a page" (the item page, kept on a wide screen too).
    if (url.origin !== location.origin || !ITEM.test(url.pathname) || url.searchParams.has("full")) return;
    event.preventDefault();
    open(url.href, { push: true, focus: pane.contains(link) });
  }

  // Back and forward: the pane follows the address (the list's own entries are pages of their own).
  function popped() {
    if (!active() || location.pathname !== listPath) return;
    var id = new URLSearchParams(location.search).get("item");
    if (id && /^\d+$/.test(id)) { open("/inbox/items/" + id + "/", { push: false, focus: false }); return; }
    ++showing;
    if (window.inboxLive) window.inboxLive.retire();
    pane.innerHTML = '<p class="split-empty muted" data-split-empty>Select an item to read it here.</p>';
  }

  var moveTimer = null;
  window.InboxSplit = {
    active: active,
    // j / k (keys.js): the selected row's item beside the list; a run of presses shows only where it stops,
    // unless the item was fetched ahead.
    showSelected: function () {
      var row = Inbox.rows()[Inbox.selectedIndex()];
      if (!row) return;
      clearTimeout(moveTimer);
      moveTimer = null;
      var url = new URL(row.dataset.href, location.href);
      if (ahead[url.pathname]) { open(url.href, { push: true, focus: false }); return; }
      moveTimer = setTimeout(function () {
        moveTimer = null;
        open(url.href, { push: true, focus: false });
      }, 120);
    },
    // Enter / o: into the selected item (shown first if it is not yet).
    enter: function (row) {
      var shown = root();
      if (shown && shown.dataset.itemId === row.dataset.itemId) {
        var heading = pane.querySelector("#item-heading");
        if (heading) heading.focus();
        return;
      }
      open(row.dataset.href, { push: true, focus: true });
    },
  };

  // Every link or row that opens an item (inbox.js, triage.js's chain) opens it here on a wide screen.
  var openPage = Inbox.open;
  Inbox.open = function (href) {
    var url = new URL(href, location.href);
    if (active() && url.origin === location.origin && ITEM.test(url.pathname)) open(url.href, { push: true, focus: true });
    else openPage(href);
  };

  document.addEventListener("click", click);
  document.addEventListener("submit", submit);
  window.addEventListener("popstate", popped);
  document.addEventListener("inbox:live-applied", function () { markRow(true); });
  if (root()) {
    history.replaceState({ split: root().dataset.itemId }, "", location.href);
    markRow();
    rowInSight();
    var next = pane.querySelector("[data-triage-next]");
    if (next && active()) fetchAhead(next.href);
  } else if (active() && Inbox.rows().length) {
    // The list opened without an item: its first one beside it, as if chosen (the address names it).
    open(Inbox.rows()[0].dataset.href, { push: false, focus: false, auto: true });
  }
})();
