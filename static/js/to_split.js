/* One address per item, whatever the width it is opened at.

   A link to an item (/inbox/items/<id>/: in a mail, a notice, the audit or run page) opens it beside the list on
   a wide screen: before the item page is drawn, its address is replaced by the split view's (/inbox/?<the list's
   filters>&item=<id>), so Back goes where the link was and Reload shows the split view again. The item page
   stays: below the breakpoint (split.js's and list.css's width: one column, as on a phone), and when it was
   reached from an item page (its Next / Previous, the next item after deciding, the agent's follow-up: whoever
   opened the item as a page goes on in pages).

   The other way round, a split view's address opened below the breakpoint (a link shared from a desktop, a
   window made narrow) is replaced by the item's page, which a phone shows in one column.

   Loaded in <head>, not deferred, where listing.views asks for it (data-split-url on the item page, data-page-url
   on the list with a selected item). Each page goes only where the other would not send it back at the same
   width: no loop. */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) return;
  var wide = window.matchMedia("(min-width: 1100px)").matches;
  var target = wide ? script.dataset.splitUrl : script.dataset.pageUrl;
  if (!target) return;
  if (wide) {
    var from = document.referrer ? new URL(document.referrer) : null;
    if (from && from.origin === location.origin && /^\/inbox\/items\/\d+\/$/.test(from.pathname)) return;
  }
  document.documentElement.classList.add("to-other-view");  // not drawn while the other view loads (app.css)
  window.location.replace(target);
})();
