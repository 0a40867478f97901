/* Accessibility the server cannot write itself:

   - a block of code that scrolls gets tabindex="0" and a name, so keyboard users can scroll it;
   - django-jsonform draws its form in the browser with labels that are not tied to their inputs: each row's
     label gets a `for` and its input an `id` (and a required field an aria-required), so clicking the label
     focuses the field and screen readers read the name; its "[-]" / "[+]" toggles get names too. */
(function () {
  "use strict";

  var counter = 0;

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

  function formLabels() {
    document.querySelectorAll(".rjf-form-row").forEach(function (row) {
      var label = row.querySelector("label");
      var input = row.querySelector("input:not([type=hidden]), select, textarea");
      if (!label || !input || label.htmlFor || row.querySelectorAll("input:not([type=hidden]), select, textarea").length > 1) return;
      if (!input.id) input.id = "rjf-field-" + (++counter);
      label.htmlFor = input.id;
      if (label.classList.contains("rjf-required")) input.setAttribute("aria-required", "true");
    });
    document.querySelectorAll(".rjf-form-group-title-button, .rjf-collapsible-toggle, button.rjf-remove-button").forEach(function (button) {
      if (button.getAttribute("aria-label")) return;
      var group = button.closest(".rjf-form-group, .rjf-form-row");
      var title = group && group.querySelector(".rjf-form-group-title, label");
      var what = title ? title.textContent.replace(/\[[-+]\]/g, "").trim() : "this part";
      var text = button.textContent.trim();
      button.setAttribute("aria-label", (text === "[+]" ? "Expand " : text === "[-]" ? "Collapse " : "Remove ") + what);
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

  function run() { scrollables(); formLabels(); scrollingBoxes(); }

  var pending = false;
  new MutationObserver(function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; run(); });
  }).observe(document.body, { subtree: true, childList: true });
  window.addEventListener("resize", scrollingBoxes);
  run();
})();
