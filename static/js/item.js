/* The item page's answer form, which django-jsonform draws in the browser:

   - its labels are not tied to their inputs: each row's label gets a `for` and its input an `id` (and a
     required field aria-required), so clicking the label focuses the field and screen readers read the name;
   - its buttons show only "[-]", "[+]", "↑", "↓", "×" or "Add item": each gets a name that says what it does
     to which part ("Collapse Address", "Remove entry 2 of People"), and the collapse toggle its state;
   - an entry of a list of plain values has no label: it is named after its list ("Tags, entry 1");
   - an error is tied to its field (aria-invalid, aria-describedby), so a screen reader reads it with the field.

   Plain JS, no build step. The server renders everything else on the page. */
(function () {
  "use strict";

  var counter = 0;

  // The text of a group's title without the buttons inside it ("People [-]" -> "People").
  function ownText(element) {
    var text = "";
    if (!element) return text;
    element.childNodes.forEach(function (node) { if (node.nodeType === Node.TEXT_NODE) text += node.textContent; });
    return text.trim();
  }

  function groupTitle(group) {
    var inner = group && group.querySelector(":scope > .rjf-form-group-inner");
    var title = inner && inner.querySelector(":scope > .rjf-form-group-title");
    return ownText(title);
  }

  // The nearest enclosing group that has a title, and its title ("this form" at the top).
  function titledGroup(element) {
    var group = element.closest(".rjf-form-group");
    while (group) {
      var title = groupTitle(group);
      if (title) return title;
      group = group.parentElement && group.parentElement.closest(".rjf-form-group");
    }
    return "this form";
  }

  // An entry of a list (or a removable key of an object): the row or group wrapper that holds the controls.
  function entryOf(button) {
    var controls = button.closest(".rjf-form-row-controls");
    return controls ? controls.parentElement : null;
  }

  function entryNumber(entry) {
    var siblings = Array.prototype.filter.call(entry.parentElement.children, function (child) {
      return child.querySelector(":scope > .rjf-form-row-controls");
    });
    return siblings.indexOf(entry) + 1;
  }

  function entryName(button) {
    var entry = entryOf(button);
    if (!entry || !entry.parentElement) return titledGroup(button);
    return "entry " + entryNumber(entry) + " of " + titledGroup(entry.parentElement);
  }

  function nameButtons(form) {
    form.querySelectorAll(".rjf-collapse-button").forEach(function (button) {
      var collapsed = button.textContent.indexOf("+") >= 0;
      var what = titledGroup(button);
      button.setAttribute("aria-label", (collapsed ? "Expand " : "Collapse ") + what);
      button.setAttribute("aria-expanded", collapsed ? "false" : "true");
    });
    form.querySelectorAll(".rjf-add-button").forEach(function (button) {
      button.setAttribute("aria-label", "Add an entry to " + titledGroup(button));
    });
    form.querySelectorAll(".rjf-remove-button").forEach(function (button) {
      button.setAttribute("aria-label", "Remove " + entryName(button));
    });
    form.querySelectorAll(".rjf-move-up-button, .rjf-move-down-button").forEach(function (button) {
      var up = button.classList.contains("rjf-move-up-button");
      button.setAttribute("aria-label", "Move " + entryName(button) + (up ? " up" : " down"));
    });
  }

  function tieLabels(form) {
    form.querySelectorAll(".rjf-form-row").forEach(function (row) {
      var label = row.querySelector("label");
      var inputs = row.querySelectorAll("input:not([type=hidden]), select, textarea");
      if (!label || inputs.length !== 1 || label.htmlFor) return;
      var input = inputs[0];
      if (!input.id) input.id = "rjf-field-" + (++counter);
      label.htmlFor = input.id;
      if (label.classList.contains("rjf-required")) input.setAttribute("aria-required", "true");
    });
  }

  // A date-time field is two inputs under one label (django-jsonform): each is named "<field>, date" and
  // "<field>, time", and marked required with its field.
  function nameDateTimes(form) {
    form.querySelectorAll(".rjf-datetime-field").forEach(function (field) {
      var row = field.closest(".rjf-form-row");
      var label = row && row.querySelector("label");
      var name = label ? label.textContent.replace(/\s*\*\s*$/, "").trim() : "Date and time";
      var required = label && label.classList.contains("rjf-required");
      [[".rjf-datetime-field-date input", "date"], [".rjf-datetime-field-time input", "time"]].forEach(function (pair) {
        var input = field.querySelector(pair[0]);
        if (!input) return;
        input.setAttribute("aria-label", name + ", " + pair[1]);
        if (required) input.setAttribute("aria-required", "true");
      });
    });
  }

  /* With no date, a date-time field sends nothing, yet django-jsonform shows "12:00:00 am" in its time box: the box
     stays empty (and says why) until a date is chosen, then shows the time the field will send. React writes its
     text back when it renders, so this runs again after each change of the form. */
  function blankTimes(form) {
    form.querySelectorAll(".rjf-datetime-field").forEach(function (field) {
      var date = field.querySelector(".rjf-datetime-field-date input");
      var time = field.querySelector(".rjf-datetime-field-time input");
      if (!date || !time) return;
      if (date.value) {
        if (!time.value && time.dataset.itemTime) time.value = time.dataset.itemTime;
        time.placeholder = "";
        return;
      }
      if (time.value) time.dataset.itemTime = time.value;
      time.value = "";
      time.placeholder = "Choose a date first";
    });
  }

  // A row with a <label> is named by it (tieLabels); a list's entries of plain values have none.
  function labelled(input, row) {
    if (input.closest("label") || input.getAttribute("aria-labelledby")) return true;
    if (input.getAttribute("aria-label") && !input.dataset.itemNamed) return true;
    return Boolean(row && row.querySelector("label"));
  }

  function nameEntries(form) {
    form.querySelectorAll(".rjf-form-row input:not([type=hidden]), .rjf-form-row select, .rjf-form-row textarea").forEach(function (input) {
      var row = input.closest(".rjf-form-row");
      if (labelled(input, row)) return;
      var list = row && row.parentElement;
      input.setAttribute("aria-label", list ? titledGroup(list) + ", entry " + entryNumber(row) : "Value");
      input.dataset.itemNamed = "1";
    });
  }

  function tieErrors(form) {
    form.querySelectorAll(".rjf-input-group, .rjf-check-input, .rjf-datetime-field").forEach(function (group) {
      var errors = group.querySelectorAll(":scope > .rjf-error-text");
      var inputs = group.querySelectorAll("input:not([type=hidden]), select, textarea");
      var ids = [];
      errors.forEach(function (error) {
        if (!error.id) error.id = "item-field-error-" + (++counter);
        ids.push(error.id);
      });
      inputs.forEach(function (input) {
        if (ids.length) {
          input.setAttribute("aria-invalid", "true");
          input.setAttribute("aria-describedby", ids.join(" "));
        } else if (input.getAttribute("aria-invalid")) {
          input.removeAttribute("aria-invalid");
          input.removeAttribute("aria-describedby");
        }
      });
    });
  }

  function fit(form) {
    tieLabels(form); nameDateTimes(form); blankTimes(form); nameButtons(form); nameEntries(form); tieErrors(form);
  }

  function setup() {
    // A refused answer is drawn by the POST to …/decide/: the address bar keeps the item's own URL (a reload or
    // a shared link opens the item, not a form post).
    if (/\/decide\/$/.test(location.pathname) && window.history && history.replaceState) {
      history.replaceState(null, "", location.pathname.replace(/decide\/$/, "") + location.search + location.hash);
    }
    document.querySelectorAll("[data-schema-form]").forEach(function (form) {
      var pending = false;
      new MutationObserver(function () {
        if (pending) return;
        pending = true;
        window.requestAnimationFrame(function () { pending = false; fit(form); });
      }).observe(form, { subtree: true, childList: true, characterData: true });
      ["input", "change", "click", "focusout"].forEach(function (type) {
        form.addEventListener(type, function () { window.requestAnimationFrame(function () { blankTimes(form); }); });
      });
      fit(form);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
