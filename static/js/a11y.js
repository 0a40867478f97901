/* Accessibility the server cannot write itself: a block of code, a table or a card that scrolls gets
   tabindex="0" and a name, so keyboard users can scroll it. (The answer form django-jsonform draws in the
   browser is fitted by item.js.) */
(function () {
  "use strict";

  function scrollables() {
    document.querySelectorAll("pre, .diff").forEach(function (block) {
      if (block.hasAttribute("tabindex")) return;
      block.setAttribute("tabindex", "0");
      if (!block.hasAttribute("aria-label") && !block.hasAttribute("role")) {
        block.setAttribute("role", "region");
        var heading = block.closest("section, details, .outcome, .card");
        var title = heading && heading.querySelector(".card-title, .label, summary, h2, h3");
        block.setAttribute("aria-label", title ? title.textContent.trim().slice(0, 80) : "Code");
      }
    });
  }

  // A table or card that scrolls sideways (a phone) must be reachable by keyboard too.
  function scrollingBoxes() {
    document.querySelectorAll(".table-card, .card, .tabs").forEach(function (box) {
      if (box.hasAttribute("tabindex") || box.scrollWidth <= box.clientWidth + 1) return;
      box.setAttribute("tabindex", "0");
      // Only a plain box becomes a region: a <nav> (the list's tabs) or a <form> (the audit log's filters) has a
      // role of its own, and role="region" is not one axe allows on them.
      if (!box.hasAttribute("role") && (box.tagName === "DIV" || box.tagName === "SECTION")) {
        box.setAttribute("role", "region");
      }
      if (!box.hasAttribute("aria-label")) {
        var title = box.querySelector(".card-title, h2, h3, caption");
        box.setAttribute("aria-label", title ? title.textContent.trim().slice(0, 80) : "Scrollable content");
      }
    });
  }

  /* The list's tabs and the main menu scroll sideways on a phone: data-more says which edge hides more
     ("left", "right", "both"), and screens.css fades that edge out. */
  function markEdges(box) {
    var left = box.scrollLeft > 1;
    var right = box.scrollLeft + box.clientWidth < box.scrollWidth - 1;
    var more = left && right ? "both" : left ? "left" : right ? "right" : "";
    if (more) box.setAttribute("data-more", more);
    else box.removeAttribute("data-more");
  }

  function scrollHints() {
    document.querySelectorAll(".tabs, .mainnav").forEach(function (box) {
      if (!box.dataset.edgesWatched) {
        box.dataset.edgesWatched = "1";
        box.addEventListener("scroll", function () { markEdges(box); }, { passive: true });
      }
      markEdges(box);
    });
  }

  function run() { scrollables(); scrollingBoxes(); scrollHints(); }

  var pending = false;
  new MutationObserver(function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; run(); });
  }).observe(document.body, { subtree: true, childList: true });
  window.addEventListener("resize", function () { scrollingBoxes(); scrollHints(); });
  run();
})();
