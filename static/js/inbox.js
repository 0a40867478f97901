/* Approval Inbox page behaviour that belongs in the browser: countdowns, the list's row selection, bulk
   selection, the edit fields of "Approve with edits". Plain JS, no build step; every feature degrades to
   plain links and forms. What the server knows (ages, sort order, the resume preview, the edit diff) is
   rendered by the server. */
(function () {
  "use strict";

  // --- countdowns -------------------------------------------------------------------------------
  function formatRemaining(ms) {
    var s = Math.floor(ms / 1000);
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (d > 0) return d + "d " + h + "h";
    if (h > 0) return h + "h " + String(m).padStart(2, "0") + "m";
    return m + "m " + String(sec).padStart(2, "0") + "s";
  }

  function tickCountdowns() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-expires"));
      if (isNaN(at)) return;
      var left = at - now;
      el.classList.toggle("is-past", left <= 0);
      el.classList.toggle("is-urgent", left > 0 && left < 5 * 60 * 1000);
      el.classList.toggle("is-soon", left >= 5 * 60 * 1000 && left < 60 * 60 * 1000);
      el.textContent = left <= 0 ? "expired" : "in " + formatRemaining(left);
    });
  }

  // The list's Age column follows the clock in the server's words (the steps short_age renders with).
  function tickAges() {
    var holder = document.getElementById("age-steps");
    if (!holder) return;
    var steps = JSON.parse(holder.textContent), now = Date.now();
    document.querySelectorAll(".col-age time[datetime]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      var seconds = Math.max(0, Math.floor((now - at) / 1000));
      var step = steps.find(function (s) { return s.below === null || seconds < s.below; });
      if (step) el.textContent = step.words.replace("{n}", String(Math.floor(seconds / step.unit)));
    });
  }

  // --- list: rows and the selected row (keys.js moves it) ---------------------------------------------------------------------
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr[data-item-row]")); }

  function select(index) {
    var all = rows();
    if (!all.length) return;
    index = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (row, i) { row.classList.toggle("is-selected", i === index); row.setAttribute("aria-selected", i === index ? "true" : "false"); });
    all[index].scrollIntoView({ block: "nearest" });
    // Real focus, not only a highlight: screen readers and Enter/Tab follow the selected row.
    var link = all[index].querySelector(".row-link");
    if (link && document.activeElement !== link) link.focus({ preventScroll: true });
  }

  function selectedIndex() { return rows().findIndex(function (row) { return row.classList.contains("is-selected"); }); }

  function openRow(row) { if (row && row.dataset.href) window.Inbox.open(row.dataset.href); }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function onRowClick(event) {
    var row = event.target.closest("tr[data-item-row]");
    if (!row || event.target.closest("a, button, input, select, textarea, label")) return;
    if (window.getSelection && String(window.getSelection())) return;  // let people select text
    openRow(row);
  }

  // --- list: bulk selection ----------------------------------------------------------------------
  // The bulk form posts the checked rows without any script; this only adds select-all, the count and
  // the row highlight. Rows the live updates swap in are picked up because everything is looked up anew.
  function updateBulk() {
    var form = document.querySelector("[data-bulk-form]");
    if (!form) return;
    var boxes = Array.prototype.slice.call(document.querySelectorAll("input[data-bulk-select]:not([disabled])"));
    var checked = boxes.filter(function (box) { return box.checked; });
    boxes.forEach(function (box) {
      var row = box.closest("tr[data-item-row]");
      if (row) row.classList.toggle("is-checked", box.checked);
    });
    var all = document.querySelector("[data-bulk-all]");
    if (all) {
      all.checked = boxes.length > 0 && checked.length === boxes.length;
      all.indeterminate = checked.length > 0 && checked.length < boxes.length;
      all.disabled = boxes.length === 0;
    }
    var count = form.querySelector("[data-bulk-count]");
    if (count) count.textContent = checked.length ? checked.length + " selected" : "Select items to decide them together";
    form.classList.toggle("has-selection", checked.length > 0);
    form.querySelectorAll("[data-bulk-action]").forEach(function (button) { button.disabled = checked.length === 0; });
  }

  function setupBulk() {
    if (!document.querySelector("[data-bulk-form]")) return;
    document.addEventListener("change", function (event) {
      var target = event.target;
      if (target.matches && target.matches("[data-bulk-all]")) {
        document.querySelectorAll("input[data-bulk-select]:not([disabled])").forEach(function (box) { box.checked = target.checked; });
      }
      if (target.matches && target.matches("[data-bulk-all], [data-bulk-select]")) updateBulk();
    });
    document.addEventListener("inbox:live-applied", updateBulk);
    updateBulk();
  }

  // Approve with edits: one field per argument when every argument is a plain value (text, number,
  // true/false), so nobody has to escape a multi-line email body by hand. The fields write the JSON
  // textarea, which is what the form submits and what the server checks; "Edit as JSON" shows it.
  function plainObject(text) {
    var value;
    try { value = JSON.parse(text); } catch (e) { return null; }
    if (!value || typeof value !== "object" || Array.isArray(value)) return null;
    for (var key in value) {
      if (value[key] !== null && ["string", "number", "boolean"].indexOf(typeof value[key]) < 0) return null;
    }
    return value;
  }

  function editField(key, value, kind, present) {
    var wrap = document.createElement("label");
    wrap.className = "field";
    var name = document.createElement("span");
    name.textContent = key;
    wrap.appendChild(name);
    var input;
    if (kind === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = value === true;
      wrap.classList.add("field-check");
    } else if (kind === "number" || kind === "integer") {
      input = document.createElement("input");
      input.type = "number";
      input.step = "any";
      input.value = value === null || value === undefined ? "" : String(value);
    } else {
      var text = value === null || value === undefined ? "" : String(value);
      var long = text.indexOf("\n") >= 0 || text.length > 60 || /body|content|text|message|description|note/i.test(key);
      input = document.createElement(long ? "textarea" : "input");
      if (long) input.rows = Math.min(14, Math.max(3, text.split("\n").length + 1)); else input.type = "text";
      input.value = text;
    }
    input.dataset.editKey = key;
    input.dataset.editKind = kind;
    if (present) input.dataset.editPresent = "1";
    wrap.appendChild(input);
    return wrap;
  }

  function setupEditFields() {
    document.querySelectorAll("[data-edit-box]:not([data-edit-ready])").forEach(function (box) {
      box.setAttribute("data-edit-ready", "");
      var area = box.querySelector("[data-edited-args]");
      var holder = box.querySelector("[data-edit-fields]");
      var json = box.querySelector("[data-edit-json]");
      var toggle = box.querySelector("[data-edit-toggle]");
      if (!area || !holder || !json || !toggle) return;
      var kinds = {};
      try { kinds = JSON.parse(holder.dataset.editFields || "{}") || {}; } catch (e) { kinds = {}; }

      function collect() {
        var out = {};
        holder.querySelectorAll("[data-edit-key]").forEach(function (input) {
          var key = input.dataset.editKey, kind = input.dataset.editKind, present = !!input.dataset.editPresent;
          if (kind === "boolean") { if (present || input.checked) out[key] = input.checked; return; }
          if (input.value === "" && !present) return;  // an optional argument left empty stays absent
          if (kind === "number" || kind === "integer") { out[key] = input.value === "" ? null : Number(input.value); return; }
          out[key] = input.value;
        });
        return out;
      }
      function sync() {
        area.value = JSON.stringify(collect(), null, 2);
        area.dispatchEvent(new Event("input"));
      }
      function showFields() {
        var args = plainObject(area.value);
        if (!args) return false;
        holder.innerHTML = "";
        var keys = Object.keys(args);
        Object.keys(kinds).forEach(function (key) { if (keys.indexOf(key) < 0) keys.push(key); });
        keys.forEach(function (key) {
          var present = Object.prototype.hasOwnProperty.call(args, key);
          var value = present ? args[key] : undefined;
          var kind = value === null || value === undefined ? (kinds[key] || "string") : typeof value;
          holder.appendChild(editField(key, value, kind, present));
        });
        holder.hidden = false;
        json.hidden = true;
        toggle.textContent = "Edit as JSON";
        return true;
      }
      function showJson() {
        holder.hidden = true;
        json.hidden = false;
        toggle.textContent = "Edit as fields";
      }
      holder.addEventListener("input", sync);
      holder.addEventListener("change", sync);
      toggle.addEventListener("click", function () {
        if (!holder.hidden) return showJson();
        if (!showFields()) toggle.textContent = "Edit as fields (only for plain values: fix or simplify the JSON)";
      });
      toggle.hidden = false;
      if (!showFields()) {
        showJson();
        // Arguments with nested values stay JSON; a draft that is merely broken can come back to fields.
        if (!plainObject(area.dataset.proposal)) toggle.hidden = true;
      }
    });
  }

  // --- run page --------------------------------------------------------------------------------
  // "Set all" ticks every open interrupt's choice; the form's change asks the server for the preview.
  function setupSetAll() {
    var form = document.querySelector("[data-run-form]");
    if (!form) return;
    form.querySelectorAll("[data-set-all]").forEach(function (button) {
      button.addEventListener("click", function () {
        var value = button.dataset.setAll;
        form.querySelectorAll("[data-run-item]").forEach(function (li) {
          var radio = li.querySelector('input[type=radio][value="' + value + '"]:not([disabled])');
          if (radio) radio.checked = true;
        });
        form.dispatchEvent(new Event("change", { bubbles: true }));
      });
    });
  }

  // --- refusals ---------------------------------------------------------------------------------
  // A request htmx sent (hx-post, hx-get) that the server refused or could not answer: its reason goes in the
  // page's notice line (or a toast where the page has none), never silently nowhere. The API answers
  // {"detail": ...}; a page answers text.
  function refusal(xhr) {
    var text = "";
    try { var body = JSON.parse(xhr.responseText); text = body && (body.detail || body.error) || ""; } catch (e) { text = ""; }
    return text || "The request failed (HTTP " + xhr.status + "). Reload the page and try again.";
  }

  function showProblem(text) {
    var notice = document.getElementById("live-notice");
    if (notice) {
      notice.dataset.tone = "warn";
      notice.dataset.refusal = "1";
      notice.textContent = text;
      return;
    }
    var toasts = document.getElementById("live-toasts");
    if (!toasts) return;
    var toast = document.createElement("div");
    toast.className = "live-toast";
    toast.setAttribute("role", "alert");
    toast.textContent = text;
    toasts.appendChild(toast);
  }

  function setupRefusals() {
    // Trying again takes the last refusal away (a live notice that replaced it meanwhile stays).
    document.body.addEventListener("htmx:beforeRequest", function (event) {
      var notice = document.getElementById("live-notice");
      if (notice && notice.dataset.refusal && event.detail.requestConfig.verb !== "get") {
        notice.textContent = "";
        delete notice.dataset.refusal;
      }
    });
    document.body.addEventListener("htmx:responseError", function (event) { showProblem(refusal(event.detail.xhr)); });
    document.body.addEventListener("htmx:sendError", function () {
      showProblem("The server could not be reached. Check the connection and try again.");
    });
  }

  // The list's filters apply as soon as a select changes (a GET, so the URL stays shareable and the live
  // updates follow the new filters); the text fields apply on Enter. The focus comes back to the select
  // after the page loads, so a keyboard user goes on from where they were.
  var FILTER_FOCUS = "inbox:filter-focus";
  function setupFilters() {
    document.querySelectorAll("[data-filter-form]").forEach(function (form) { form.classList.add("is-auto"); });
    document.querySelectorAll("[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () {
        try { sessionStorage.setItem(FILTER_FOCUS, select.name); } catch (e) { /* storage off: no focus memory */ }
        if (select.form.requestSubmit) select.form.requestSubmit(); else select.form.submit();
      });
    });
    var remembered = null;
    try { remembered = sessionStorage.getItem(FILTER_FOCUS); sessionStorage.removeItem(FILTER_FOCUS); } catch (e) { remembered = null; }
    if (remembered) {
      var again = document.querySelector("[data-filter-form] [data-autosubmit][name='" + remembered.replace(/[^a-z_]/g, "") + "']");
      if (again) again.focus({ preventScroll: true });
    }
  }

  function init() {
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
    setInterval(tickAges, 15000);
    // Rows a live update swaps in carry the server's words for their age and countdown: bring them to this
    // page's clock at once rather than at the next tick.
    document.addEventListener("inbox:live-applied", tickCountdowns);
    document.addEventListener("inbox:live-applied", tickAges);
    document.addEventListener("click", onRowClick);
    document.addEventListener("inbox:pane-loaded", setupEditFields);  // the split view's pane (split.js)
    setupEditFields();
    setupSetAll();
    setupRefusals();
    setupFilters();
    setupBulk();
  }

  // What keys.js (the key map), triage.js and split.js use: the rule for "the user is typing", the list's rows and
  // selection, the bulk bar, and opening an item (split.js shows it in the pane on a wide screen).
  window.Inbox = {
    typing: typing,
    rows: rows,
    select: select,
    selectedIndex: selectedIndex,
    updateBulk: updateBulk,
    openRow: openRow,
    open: function (href) { window.location.href = href; },
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
