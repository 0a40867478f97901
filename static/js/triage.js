/* After deciding:

   - the chain: when the agent answers the run just decided with another interrupt, the server renders its link
     with data-chain-auto on the item page (only with "Then go to the next open item" on); it is followed at once,
     unless the approver already started on this page: then the link stays in the notice for them to take. The
     split view's pane is never taken away: the notice (a polite live region) announces the follow-up, with a button
     and the f key to open it;
   - undo: the toast after a decision ("Denied: … — Undo", on the page or in the split view's pane) counts down its
     window and loses its button when the window closes (u presses it: keys.js).

   The keys of triage (a, d, e, c, j, k, u …) are keys.js's. */
(function () {
  "use strict";

  var started = false;
  ["input", "change", "keydown", "pointerdown"].forEach(function (type) {
    document.addEventListener(type, function (event) { if (event.isTrusted) started = true; }, true);
  });
  function followChain() {
    var link = document.querySelector("a[data-chain-auto]");
    if (link && !started) window.Inbox.open(link.href);
  }
  document.addEventListener("inbox:live-applied", followChain);

  /* The follow-up the notice announces (or a decided item's "Decide the follow-up"), opened by its button or the f
     key (keys.js): in the split view beside the list, as any item. */
  function openFollowUp() {
    var link = document.querySelector("#live-notice [data-chain-notice] [data-follow-up-link]") ||
      document.querySelector("[data-follow-up] [data-follow-up-link]");
    if (!link) return false;
    window.Inbox.open(link.href);
    return true;
  }
  document.addEventListener("click", function (event) {
    if (!event.target.closest || !event.target.closest("[data-open-follow-up]")) return;
    event.preventDefault();
    openFollowUp();
  });
  window.InboxTriage = { openFollowUp: openFollowUp };
  // A new item in the split view's pane is a fresh start, as a new page is.
  document.addEventListener("inbox:pane-loaded", function () { started = false; announceAskedAgain(); countUndo(); });
  // The words of a decision sent behind the pane it moved on to arrive after the pane (split.js).
  document.addEventListener("inbox:pane-words", countUndo);
  followChain();

  /* Arrived by the chain (the server rendered "The agent asked again: …" into the live region): a region's
     content at load is not announced, so it is set again once the page is up, for screen readers too. */
  function announceAskedAgain() {
    var asked = document.querySelector("#live-notice [data-asked-again]");
    if (!asked) return;
    var region = asked.parentNode, notice = asked.outerHTML;
    region.textContent = "";
    window.setTimeout(function () { region.innerHTML = notice; }, 150);
  }
  announceAskedAgain();

  /* The undo toast: the server says how long its window has left (data-undo-ms); the countdown is for the eye
     (aria-hidden), and when the window closes the form goes, leaving the words as a plain notice. */
  function countUndo() {
    var toast = document.querySelector("[data-undo-toast]:not([data-undo-counting])");
    if (!toast) return;
    toast.setAttribute("data-undo-counting", "");
    var end = Date.now() + Number(toast.getAttribute("data-undo-ms") || 0);
    var left = toast.querySelector("[data-undo-left]");
    var timer = null;
    var tick = function () {
      var seconds = Math.ceil((end - Date.now()) / 1000);
      if (seconds > 0) { if (left) left.textContent = seconds + " s left"; return; }
      window.clearInterval(timer);
      var form = toast.querySelector("[data-undo-form]");
      if (form) form.remove();
      toast.removeAttribute("data-undo-toast");
    };
    timer = window.setInterval(tick, 250);
    tick();
  }
  countUndo();
})();
