// The book's explorers for readers who do not see or do not point: every frame says in
// words what it shows, every control has a name, and a change of frame is announced.
//
// An explorer precomputed for the HTML book (a box with class "static-explorer", made by
// transformer_lib.views.explorers.frames.static_explorer) carries, after its frames, a
// hidden element of class "explorer-alt": its text says what every frame shows, and its
// data-frames attribute (a JSON list) what each frame shows, in the order of the frames'
// classes "frame-0", "frame-1", ... A widget image has no alt attribute of its own.
//
// For every explorer box ("transformer-explorer"), static or live, this script
//   * gives each frame its alt text (this frame's description, then the common one);
//   * makes the box a group named by its title, so a screen reader says where focus is;
//   * names each slider after its label (and the label's tooltip, which says more), with
//     the readout as its spoken value; groups each row of toggle buttons under its label
//     and says which button is pressed;
//   * announces, in a polite live region, the description of a new frame after a change.
// The widget manager renders widgets after the page has loaded and replaces a frame's
// image on every change, so all of this runs again whenever the page's tree changes.
(function () {
  "use strict";

  var ANNOUNCE_DELAY_MS = 350; // after the last change: dragging a slider says it once

  function labelOf(widget) {
    var label = widget.querySelector(":scope > .widget-label");
    var text = label ? label.textContent.trim() : "";
    var hint = label ? (label.getAttribute("title") || "").trim() : "";
    if (hint === "null") { label.removeAttribute("title"); } // a widget without a tooltip
    if (hint === "null" || hint === text) { hint = ""; }
    return { text: text, hint: hint };
  }

  function nameOf(widget, fallback) {
    var l = labelOf(widget);
    var text = l.text || fallback || "";
    return l.hint ? text + ": " + l.hint : text;
  }

  function describeFrames(box) {
    var source = box.querySelector(".explorer-alt");
    if (!source) { return; }
    var common = source.textContent.trim();
    var each = [];
    try { each = JSON.parse(source.getAttribute("data-frames") || "[]"); } catch (e) { each = []; }
    // The text now lives in the frames' alt: reading it twice would only repeat it.
    source.setAttribute("aria-hidden", "true");
    box.querySelectorAll("img").forEach(function (img) {
      if (img.hasAttribute("data-described")) { return; }
      var match = /(?:^|\s)frame-(\d+)(?:\s|$)/.exec(img.className);
      var own = match ? each[Number(match[1])] : "";
      img.setAttribute("alt", own ? own + ". " + common : common);
      img.setAttribute("data-described", "");
      if (own) { announce(box, own); }
    });
  }

  function announce(box, text) {
    var region = box.querySelector(":scope > .explorer-announcer");
    if (!region) { return; } // made once the box is ready: the first frame is not announced
    clearTimeout(region._timer);
    region._timer = setTimeout(function () {
      region.textContent = "Now shown: " + text;
    }, ANNOUNCE_DELAY_MS);
  }

  function nameControls(box) {
    box.querySelectorAll(".widget-slider").forEach(function (slider) {
      var name = nameOf(slider, "slider");
      var readout = slider.querySelector(".widget-readout");
      slider.querySelectorAll("[role=slider]").forEach(function (handle) {
        handle.setAttribute("aria-label", name);
        if (readout && readout.textContent.trim()) {
          handle.setAttribute("aria-valuetext", readout.textContent.trim());
        }
      });
      if (readout && !readout.hasAttribute("data-named")) {
        readout.setAttribute("data-named", "");
        if (readout.isContentEditable) {
          readout.setAttribute("role", "textbox");
          readout.setAttribute("aria-label", name + " (type a value)");
        } else {
          readout.setAttribute("aria-hidden", "true"); // spoken as the slider's value
        }
      }
    });
    box.querySelectorAll(".widget-toggle-buttons").forEach(function (row) {
      var group = row.querySelector(":scope > div") || row;
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", nameOf(row, "options"));
      group.querySelectorAll("button").forEach(function (button) {
        button.setAttribute("aria-pressed", String(button.classList.contains("mod-active")));
      });
    });
    box.querySelectorAll(".widget-dropdown, .widget-text, .widget-textarea").forEach(
      function (widget) {
        var field = widget.querySelector("select, input, textarea");
        var l = labelOf(widget);
        if (field && l.text && !field.hasAttribute("aria-label")) {
          field.setAttribute("aria-label", l.hint ? l.text + ": " + l.hint : l.text);
        }
      }
    );
  }

  function prepare(box) {
    if (!box.hasAttribute("role")) {
      var title = box.querySelector(".explorer-title");
      box.setAttribute("role", "group");
      if (title) {
        title.id = title.id || "explorer-title-" + Math.random().toString(36).slice(2, 10);
        box.setAttribute("aria-labelledby", title.id);
      }
    }
    nameControls(box);
    describeFrames(box);
    if (!box.querySelector(":scope > .explorer-announcer") && box.querySelector("img")) {
      var region = document.createElement("div");
      region.className = "visually-hidden explorer-announcer";
      region.setAttribute("aria-live", "polite");
      region.setAttribute("aria-atomic", "true");
      box.appendChild(region);
    }
  }

  var scheduled = false;
  function update() {
    scheduled = false;
    document.querySelectorAll(".transformer-explorer").forEach(prepare);
  }
  function schedule() {
    if (!scheduled) {
      scheduled = true;
      setTimeout(update, 30); // (a timer, not an animation frame: hidden tabs get none)
    }
  }
  // Widgets are drawn after the page is parsed; watching the parse itself would slow it.
  function start() {
    update();
    new MutationObserver(schedule).observe(document.documentElement, {
      childList: true,
      subtree: true,
      characterData: true,
      attributes: true,
      attributeFilter: ["class"],
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
