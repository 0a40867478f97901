/* Every keyboard shortcut of the inbox, in one map: what each key does, where it applies, and the words the "?"
   overlay shows (generated from this map; docs/deciding.md's table is checked against it by
   tests/e2e/test_keys_browser.py). A key does nothing while the user types in a field (Esc leaves the field),
   and nothing with Ctrl, Alt or Cmd held. Where a key cannot act, it says why in the page's live region.

   Where: "list" (the inbox list, the split view included), "item" (an item page, or the item the split view
   shows), "any" (every page). */
(function () {
  "use strict";

  var Inbox = window.Inbox;  // inbox.js, loaded before this file
  var FORM = "[data-decision-form]:not([aria-disabled=true]) ";

  function $(selector) { return document.querySelector(selector); }

  // Said in the page's live region, where the eye and a screen reader both find it.
  function say(text) {
    var region = document.getElementById("live-notice") || document.getElementById("live-announce");
    if (!region) return;
    region.textContent = "";
    window.setTimeout(function () { region.textContent = text; }, 50);
  }

  function follow(selector) {
    var link = $(selector);
    if (!link) return false;
    Inbox.open(link.href);
    return true;
  }

  function firstField() {
    return $(FORM + "[data-schema-form] input:not([type=hidden]), " + FORM + "[data-schema-form] select, " +
      FORM + "[data-schema-form] textarea, " + FORM + "textarea[data-json-answer], " +
      FORM + "[data-question-answer] textarea");
  }

  /* a / d: press the button; where there is none (the item needs its form) or it is disabled, say why instead of
     doing nothing, and put the focus where the answer is given. */
  function decide(action, key) {
    var button = $(FORM + 'button[data-action="' + action + '"]');
    if (button && !button.disabled && !button.closest("fieldset:disabled")) { button.click(); return true; }
    if (button) {
      var why = document.getElementById(button.getAttribute("aria-describedby") || "");
      say("“" + key + "” cannot " + action + " here: " + (why ? why.textContent.trim() : "the button is disabled."));
      return true;
    }
    var field = firstField();
    if (!field) return false;
    field.focus();
    if (field.closest("[data-question-answer]")) {
      say("This item asks a question: answer it in words, “" + key + "” does not apply. " +
          "Write your answer and press Send this answer.");
      return true;
    }
    say("This item needs an answer from its form, not a yes/no: “" + key + "” does not apply. " +
        "Fill in the form and press Submit answer.");
    return true;
  }

  function hasList() { return Boolean($("[data-filter-form]")); }
  function hasItem() { return Boolean($("[data-triage]")); }

  // j / k: the list's selection (the split view shows the selected item beside it), or on an item page the
  // next / previous open item of the list it came from.
  function move(step) {
    if (hasList()) {
      var rows = Inbox.rows();
      if (!rows.length) return false;
      var index = Inbox.selectedIndex();
      Inbox.select(index < 0 ? 0 : index + step);
      if (window.InboxSplit && window.InboxSplit.active()) window.InboxSplit.showSelected();
      return true;
    }
    return follow(step > 0 ? "[data-triage-next]" : "[data-triage-prev]");
  }

  function openSelected() {
    var row = Inbox.rows()[Inbox.selectedIndex()];
    if (!row) return false;
    if (window.InboxSplit && window.InboxSplit.active()) window.InboxSplit.enter(row);
    else Inbox.openRow(row);
    return true;
  }

  function toggleSelected() {
    var row = Inbox.rows()[Inbox.selectedIndex()];
    var box = row && row.querySelector("input[data-bulk-select]:not([disabled])");
    if (!box) {
      if (row) say("This item cannot be selected for a bulk decision.");
      return Boolean(row);
    }
    box.checked = !box.checked;
    Inbox.updateBulk();
    return true;
  }

  function bulk(action) {
    var button = $('[data-bulk-form] [data-bulk-action="' + action + '"]');
    if (!button) return false;
    if (button.disabled) { say("Select items first: x selects the item the list is on."); return true; }
    var via = $("[data-bulk-form] [data-bulk-via]");
    if (via) via.value = "key";  // review quality counts a key from the list apart from a click
    button.click();
    return true;
  }

  function tab(name) {
    var link = $('#list-tabs a[data-tab="' + name + '"]');
    var home = $("[data-home]");
    if (link) window.location.href = link.href;
    else if (home) window.location.href = home.href + (name === "open" ? "" : "?tab=" + name);
    else return false;
    return true;
  }

  var KEYS = [
    { keys: ["j", "n"], where: "list item", does: "Next item (the split view shows it beside the list)", run: function () { return move(1); } },
    { keys: ["k", "p"], where: "list item", does: "Previous item", run: function () { return move(-1); } },
    { keys: ["Enter", "o"], where: "list", does: "Open the selected item (in the split view: go into it)", run: openSelected },
    { keys: ["a"], where: "item", does: "Approve (or Yes); an item that needs its form: go to its first field", run: function () { return decide("approve", "a"); } },
    {
      keys: ["e"], where: "item", does: "Approve with edits: open the editor at its first field",
      run: function () {
        var box = $(FORM + "[data-edit-box]");
        if (!box) return false;
        box.open = true;
        var first = box.querySelector("[data-edit-key], textarea:not([hidden])");
        if (first) first.focus();
        return true;
      },
    },
    { keys: ["d"], where: "item", does: "Deny (or No); an item that needs its form: go to its first field", run: function () { return decide("deny", "d"); } },
    {
      keys: ["c"], where: "item", does: "Write a comment",
      run: function () {
        var comment = $(FORM + 'textarea[name="comment"]') || $("textarea[name=body]");
        if (!comment) return false;
        comment.focus();
        return true;
      },
    },
    {
      keys: ["s"], where: "item", does: "Snooze: choose when it comes back to your Open list",
      run: function () {
        var until = $("[data-snooze-form] [data-snooze-until]:not([disabled])");
        if (!until) {
          if ($("[data-unsnooze]")) say("This item is snoozed already: Unsnooze brings it back now.");
          return Boolean($("[data-unsnooze]"));
        }
        until.focus();
        return true;
      },
    },
    {
      keys: ["f"], where: "item", does: "Open the follow-up the agent asked for (when the page announces one)",
      run: function () { return Boolean(window.InboxTriage) && window.InboxTriage.openFollowUp(); },
    },
    {
      keys: ["u"], where: "any", does: "Undo the decision just made (while its Undo shows)",
      run: function () {
        var button = $("[data-undo-toast] [data-undo]");
        if (!button) return false;
        button.click();
        return true;
      },
    },
    { keys: ["x"], where: "list", does: "Select the item for a bulk decision", run: toggleSelected },
    { keys: ["A"], where: "list", does: "Approve the selected items", run: function () { return bulk("approve"); } },
    { keys: ["D"], where: "list", does: "Deny the selected items", run: function () { return bulk("deny"); } },
    {
      keys: ["/"], where: "list", does: "Search messages",
      run: function () {
        var search = $("[data-search]");
        if (!search) return false;
        search.focus();
        search.select();
        return true;
      },
    },
    { keys: ["g i"], where: "any", does: "Go to the Open tab", run: function () { return tab("open"); } },
    { keys: ["g m"], where: "any", does: "Go to Mine", run: function () { return tab("mine"); } },
    { keys: ["g d"], where: "any", does: "Go to Decided", run: function () { return tab("decided"); } },
    { keys: ["?"], where: "any", does: "Show this list", run: function () { return showHelp(); } },
    { keys: ["Escape"], where: "any", does: "Close this list, or leave a text field", run: function () { return false; } },
  ];

  // How a key is written for people: "A" is Shift+A, "g i" is g then i.
  function label(key) {
    if (key === "Escape") return ["Esc"];
    if (key.length === 1 && key !== key.toLowerCase()) return ["Shift", key];
    return key.split(" ");
  }

  function applies(entry) {
    return entry.where.split(" ").some(function (where) {
      return where === "any" || (where === "list" && hasList()) || (where === "item" && hasItem());
    });
  }

  function showHelp() {
    var dialog = document.getElementById("shortcuts");
    var list = dialog && dialog.querySelector("dl");
    if (!list) return false;
    list.textContent = "";
    KEYS.filter(applies).forEach(function (entry) {
      var row = document.createElement("div");
      var term = document.createElement("dt");
      entry.keys.forEach(function (key, index) {
        if (index) term.appendChild(document.createTextNode(" or "));
        var parts = label(key);
        parts.forEach(function (part, n) {
          if (n) term.appendChild(document.createTextNode(parts[0] === "Shift" ? "+" : " "));
          var kbd = document.createElement("kbd");
          kbd.textContent = part;
          term.appendChild(kbd);
        });
      });
      var words = document.createElement("dd");
      words.textContent = entry.does;
      row.appendChild(term);
      row.appendChild(words);
      list.appendChild(row);
    });
    if (!dialog.open) dialog.showModal();
    // showModal focuses the first control, the Close button at the bottom, which scrolled a long list to its
    // end: the help opens at its top, its title focused (a screen reader reads it first).
    var title = dialog.querySelector("h2");
    if (title) title.focus({ preventScroll: true });
    dialog.scrollTop = 0;
    return true;
  }

  var pending = "";  // the first key of a two-key sequence ("g")
  var pendingTimer = null;

  function onKey(event) {
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    if (Inbox.typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.open) return;
    var key = pending ? pending + " " + event.key : event.key;
    pending = "";
    clearTimeout(pendingTimer);
    if (KEYS.some(function (entry) { return entry.keys.some(function (k) { return k.indexOf(key + " ") === 0; }); })) {
      pending = key;
      pendingTimer = setTimeout(function () { pending = ""; }, 1000);
      event.preventDefault();
      return;
    }
    var entry = KEYS.find(function (candidate) { return candidate.keys.indexOf(key) >= 0 && applies(candidate); });
    if (entry && entry.run()) event.preventDefault();
  }

  document.addEventListener("keydown", onKey);
  document.querySelectorAll("[data-show-shortcuts]").forEach(function (button) { button.addEventListener("click", showHelp); });

  // For the docs test and the curious: the map as words (no functions).
  window.InboxKeys = {
    map: function () {
      return KEYS.map(function (entry) {
        var keys = entry.keys.map(function (key) { var parts = label(key); return parts.join(parts[0] === "Shift" ? "+" : " "); });
        return { keys: keys, where: entry.where, does: entry.does };
      });
    },
    say: say,
  };
})();
