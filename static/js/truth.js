/* What the approver sees is the truth: keeps the badges, countdowns and the run header honest after a live
   update, without rewriting the page script (live.js). It only watches the DOM:

   - a status pill a live update turned into a bare "Resolved" is replaced by the item's real outcome
     (Approved, Denied, Answered, …), read from GET /api/v1/items/<id>;
   - once the page's own item is no longer open, its countdown stops and says so;
   - when the run page's live fragment is replaced, the header line follows the resume's state. */
(function () {
  "use strict";

  var body = document.body;
  var itemId = body.dataset.itemId || null;
  var asked = {};
  var LABELS = {
    approved: "Approved", approved_with_edits: "Approved with edits", denied: "Denied",
    answered: "Answered", cancelled: "Cancelled", expired: "Expired", open: "Open"
  };

  function setOutcome(pill, key) {
    pill.textContent = LABELS[key] || key;
    pill.className = pill.className.replace(/\bpill-[a-z_]+\b/g, "").trim() + " pill-" + key;
    pill.dataset.outcome = key;
  }

  function correctPill(pill) {
    var pk = pill.dataset.itemStatus;
    if (!pk || pill.dataset.outcome === undefined) return;
    if (!/\bpill-resolved\b/.test(pill.className)) {
      var match = /\bpill-(cancelled|expired)\b/.exec(pill.className);
      if (match && pill.dataset.outcome !== match[1]) setOutcome(pill, match[1]);
      return;
    }
    if (!asked[pk]) {
      asked[pk] = fetch("/api/v1/items/" + pk, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .catch(function () { return null; });
    }
    asked[pk].then(function (item) {
      if (!item || !item.outcome) return;
      document.querySelectorAll('[data-item-status="' + pk + '"]').forEach(function (other) {
        if (/\bpill-resolved\b/.test(other.className)) setOutcome(other, item.outcome);
      });
    });
  }

  function stopCountdowns() {
    if (!itemId) return;
    var pill = document.querySelector('.item-head [data-item-status="' + itemId + '"]');
    if (!pill || /\bpill-open\b/.test(pill.className)) return;
    document.querySelectorAll(".item-head .countdown[data-expires]").forEach(function (el) {
      el.removeAttribute("data-expires");
      el.classList.remove("is-soon", "is-urgent", "is-past");
      el.classList.add("is-stopped");
      el.textContent = "no longer open";
    });
    document.querySelectorAll("[data-decision-form]").forEach(function (form) {
      form.setAttribute("aria-disabled", "true");
      form.querySelectorAll("button, input, textarea, select").forEach(function (el) { el.disabled = true; });
    });
  }

  function followRunHeader() {
    var source = document.querySelector("[data-run-live] template[data-run-status-source]");
    var header = document.querySelector(".item-head [data-run-status]");
    if (!source || !header) return;
    var fresh = source.content.querySelector("[data-run-status]");
    if (fresh && fresh.innerHTML !== header.innerHTML) header.innerHTML = fresh.innerHTML;
  }

  function check() {
    document.querySelectorAll("[data-item-status]").forEach(correctPill);
    stopCountdowns();
    followRunHeader();
  }

  var pending = false;
  new MutationObserver(function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; check(); });
  }).observe(body, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ["class"] });
  check();
})();
