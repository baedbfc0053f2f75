// Page-wide fixes for readers on small screens and with assistive technology.
//
// * A box that scrolls sideways (a wide equation, table, code listing, figure or
//   attention view on a phone) says so: it gets the class "scrolls-x" and, while there is
//   more to see on a side, "more-left" / "more-right", which book.css shows as a fade at
//   that edge (touch screens hide scrollbars until one scrolls).
// * The theme's buttons get names that match what they show: the search button's name is
//   its visible text ("Search Ctrl + K"), and the colour-mode button says which mode is on
//   and that pressing it changes the mode (its icons are decoration).
(function () {
  "use strict";

  var SCROLLERS = [
    "pre",
    "mjx-container[display=true]",
    "div.math",
    ".pst-scrollable-table-container",
    ".table-wrapper",
    ".cell_output",
    ".cell_output figure",
    ".cell_output .output",
    ".widget-box",
    ".bertviz",
    ".lt-figure",
  ].join(", ");

  function scrollsSideways(el) {
    if (el.scrollWidth <= el.clientWidth + 1) { return false; }
    var overflow = getComputedStyle(el).overflowX;
    return overflow === "auto" || overflow === "scroll";
  }

  function markEdges(el) {
    var left = el.scrollLeft > 1;
    var right = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    el.classList.toggle("more-left", left);
    el.classList.toggle("more-right", right);
  }

  function onScroll(event) { markEdges(event.currentTarget); }

  function markScrollers() {
    var article = document.querySelector(".bd-article") || document.body;
    // Read every box first, then write: interleaving would lay the page out once per box.
    var boxes = Array.prototype.slice.call(article.querySelectorAll(SCROLLERS));
    var wide = boxes.map(scrollsSideways);
    boxes.forEach(function (el, i) {
      if (wide[i] !== el.classList.contains("scrolls-x")) {
        el.classList.toggle("scrolls-x", wide[i]);
        if (wide[i]) {
          el.addEventListener("scroll", onScroll, { passive: true });
          // A keyboard reader can then scroll it with the arrow keys.
          if (!el.hasAttribute("tabindex")) {
            el.setAttribute("tabindex", "0");
            el.setAttribute("data-scroll-focus", "");
          }
        } else {
          el.removeEventListener("scroll", onScroll);
          el.classList.remove("more-left", "more-right");
          if (el.hasAttribute("data-scroll-focus")) {
            el.removeAttribute("tabindex");
            el.removeAttribute("data-scroll-focus");
          }
        }
      }
    });
    boxes.forEach(function (el, i) { if (wide[i]) { markEdges(el); } });
  }

  function nameThemeButtons() {
    var search = document.querySelectorAll(".search-button-field[aria-label]");
    search.forEach(function (button) {
      if (button.textContent.trim()) { button.removeAttribute("aria-label"); }
    });
    var mode = document.documentElement.getAttribute("data-mode") || "light";
    var next = { light: "dark", dark: "the system setting", auto: "light" }[mode] || "light";
    var now = mode === "auto" ? "the system setting" : mode;
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      button.querySelectorAll("i, svg, span").forEach(function (icon) {
        icon.setAttribute("aria-hidden", "true");
        icon.removeAttribute("title");
      });
      button.setAttribute("aria-label", "Colour mode: " + now + " (press for " + next + ")");
      button.setAttribute("data-bs-title", "Colour mode: " + now);
    });
  }

  var scheduled = false;
  function update() {
    scheduled = false;
    markScrollers();
    nameThemeButtons();
  }
  function schedule() {
    if (!scheduled) {
      scheduled = true;
      setTimeout(update, 200);
    }
  }
  // Only once the page is parsed: laying out a page that is still arriving would slow the
  // arrival. Later changes (typeset equations, widgets drawn, frames switched) are watched.
  function start() {
    update();
    new MutationObserver(function (records) {
      // Our own class changes (scrolls-x, more-left, ...) need no second pass.
      for (var i = 0; i < records.length; i++) {
        if (records[i].type !== "attributes" || records[i].attributeName === "data-mode") {
          schedule();
          return;
        }
      }
    }).observe(document.documentElement, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ["data-mode"],
    });
    window.addEventListener("resize", schedule);
    window.addEventListener("load", schedule);
    if (document.fonts && document.fonts.ready) { document.fonts.ready.then(schedule); }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
