/* Triage at the keyboard, beside inbox.js (which owns the list's j/k/x/Enter and "?"):

   - on an item page: a approve, d deny, e open "approve with edits", c comment, n / p next / previous open
     item (the links of [data-triage], in the list's order and filters);
   - "?" shows the shortcuts of the current page: a page that has its own (<template data-page-shortcuts>)
     puts them in the dialog;
   - in the list, the row j/k selects also gets real keyboard focus (its link), so focus rings and screen
     readers follow;
   - the chain: a follow-up interrupt of the run just decided is opened as soon as it arrives. */
(function () {
  "use strict";

  var typing = window.Inbox.typing;  // inbox.js, loaded before this file

  // "?" lists this page's shortcuts.
  var pageShortcuts = document.querySelector("template[data-page-shortcuts]");
  var dialogList = document.querySelector("#shortcuts dl");
  if (pageShortcuts && dialogList) dialogList.innerHTML = pageShortcuts.innerHTML;

  function click(selector) {
    var el = document.querySelector(selector);
    if (!el || el.disabled) return false;
    el.click();
    return true;
  }

  function follow(selector) {
    var link = document.querySelector(selector);
    if (!link) return false;
    window.location.href = link.href;
    return true;
  }

  var form = "[data-decision-form]:not([aria-disabled=true]) ";
  var ITEM_KEYS = {
    a: function () { return click(form + 'button[data-action="approve"]'); },
    d: function () { return click(form + 'button[data-action="deny"]'); },
    e: function () {
      var box = document.querySelector(form + "[data-edit-box]");
      if (!box) return false;
      box.open = true;
      var first = box.querySelector("[data-edit-key], textarea:not([hidden])");
      if (first) first.focus();
      return true;
    },
    c: function () {
      var comment = document.querySelector(form + 'textarea[name="comment"]') || document.querySelector("textarea[name=body]");
      if (!comment) return false;
      comment.focus();
      return true;
    },
    n: function () { return follow("[data-triage-next]"); },
    p: function () { return follow("[data-triage-prev]"); },
  };

  /* The chain: when the agent answers the run just decided with another interrupt, the server renders its
     link with data-chain-auto (only with "Then go to the next open item" on). Follow it at once, unless the
     approver already started on this page: then the link stays in the notice for them to take. */
  var started = false;
  ["input", "change", "keydown", "pointerdown"].forEach(function (type) {
    document.addEventListener(type, function (event) { if (event.isTrusted) started = true; }, true);
  });
  function followChain() {
    var link = document.querySelector("a[data-chain-auto]");
    if (link && !started) window.location.assign(link.href);
  }
  document.addEventListener("inbox:live-applied", followChain);
  followChain();

  document.addEventListener("keydown", function (event) {
    if (event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) return;
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.open) return;
    if (!document.querySelector("[data-triage]")) return;
    var action = ITEM_KEYS[event.key];
    if (action && action()) event.preventDefault();
  });

})();
