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
//
// Phone versions of frames: on a screen up to PHONE_MEDIA wide (as book.css and the
// phone figures of scripts/vendor_js.py), a precomputed frame whose PNG carries a phone
// version (its panels stacked in one column, in a "phOn" chunk: see
// transformer_lib.views.phone_layout and explorers.frames.figure_to_png) is shown as
// that version instead. The widget manager draws each frame from the widget state as a
// blob: URL, only the selected frame of a Stack and a new <img> on every change, so
// each new frame image is read once (its bytes, then the chunk), remembered by its
// explorer and frame number, and from then on swapped before it is painted. Its alt and
// description stay as they are; on a wider screen the desktop frame comes back.
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

  // ---- Phone versions of frames --------------------------------------------------------

  var PHONE_MEDIA = "(max-width: 600px)";
  var PHONE_CHUNK = "phOn";
  var TEXT_SIZE_KEY = "smallest-text-px";
  var MIN_TEXT_PX = 9;
  var narrow = window.matchMedia ? window.matchMedia(PHONE_MEDIA) : null;
  var frameCache = new WeakMap(); // explorer box -> Map(frame number -> entry or null)

  function chunksOf(bytes) {
    var view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    var out = [];
    for (var at = 8; at + 12 <= bytes.length; ) {
      var length = view.getUint32(at);
      var kind = String.fromCharCode(bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]);
      out.push({ kind: kind, data: bytes.subarray(at + 8, at + 8 + length) });
      if (kind === "IEND") { break; }
      at += 12 + length;
    }
    return out;
  }

  // What a frame's PNG carries: null, or its phone version and the width (CSS px) below
  // which that version's smallest text would be under MIN_TEXT_PX (as readable_width).
  function phoneEntry(buffer) {
    var bytes = new Uint8Array(buffer);
    var phone = null;
    chunksOf(bytes).forEach(function (c) { if (c.kind === PHONE_CHUNK) { phone = c.data; } });
    if (!phone || phone.length < 24) { return null; }
    var width = new DataView(phone.buffer, phone.byteOffset + 16, 4).getUint32(0);
    var smallest = null;
    chunksOf(phone).forEach(function (c) {
      if (c.kind !== "tEXt") { return; }
      var text = new TextDecoder("latin1").decode(c.data).split("\0");
      if (text[0] === TEXT_SIZE_KEY && isFinite(Number(text[1]))) { smallest = Number(text[1]); }
    });
    var readable = width;
    if (smallest && smallest > 0) {
      readable = Math.min(width, Math.ceil((width * MIN_TEXT_PX) / smallest) + 1);
    }
    return {
      phone: new Blob([phone], { type: "image/png" }),
      desktop: new Blob([bytes], { type: "image/png" }),
      readable: readable,
    };
  }

  function frameNumber(img) {
    var match = /(?:^|\s)frame-(\d+)(?:\s|$)/.exec(img.className);
    return match ? Number(match[1]) : -1;
  }

  function setSource(img, blob) {
    var old = img.getAttribute("src");
    var url = URL.createObjectURL(blob);
    img._ownUrl = url;
    img.src = url;
    if (old && old.indexOf("blob:") === 0) { URL.revokeObjectURL(old); }
  }

  function showPhone(img, entry) {
    if (!img.hasAttribute("data-phone-frame")) {
      img.setAttribute("data-desktop-max-width", img.style.maxWidth || "");
    }
    img.setAttribute("data-phone-frame", "");
    img.style.maxWidth = "max(100%, " + entry.readable + "px)";
    setSource(img, entry.phone);
  }

  function showDesktop(img, entry) {
    img.style.maxWidth = img.getAttribute("data-desktop-max-width") || "";
    img.removeAttribute("data-phone-frame");
    img.removeAttribute("data-desktop-max-width");
    setSource(img, entry.desktop);
  }

  function placeFrame(img) {
    var box = img.closest(".static-explorer");
    var number = frameNumber(img);
    if (!box || number < 0) { return; }
    var src = img.getAttribute("src") || "";
    var phoneShown = img.hasAttribute("data-phone-frame") && src === img._ownUrl;
    var wanted = narrow !== null && narrow.matches;
    if (!frameCache.has(box)) { frameCache.set(box, new Map()); }
    var cache = frameCache.get(box);
    var entry = cache.get(number);
    if (entry === null) { return; } // no phone version: the desktop frame on every screen
    if (entry !== undefined) {
      if (wanted && !phoneShown) { showPhone(img, entry); }
      if (!wanted && phoneShown) { showDesktop(img, entry); }
      return;
    }
    if (!wanted || !src || img._reading === src) { return; }
    img._reading = src;
    // Frames of an explorer with phone versions are hidden while the first read is under
    // way, so that a phone does not flash the wide frame.
    var hide = box._hasPhoneFrames === true;
    if (hide) { img.style.visibility = "hidden"; }
    fetch(src)
      .then(function (response) { return response.arrayBuffer(); })
      .then(function (buffer) {
        var found = phoneEntry(buffer);
        cache.set(number, found);
        if (found) { box._hasPhoneFrames = true; }
        if (found && img.getAttribute("src") === src && narrow.matches) { showPhone(img, found); }
      })
      .catch(function () { /* a frame replaced meanwhile: its successor is read instead */ })
      .then(function () {
        img._reading = null;
        if (hide) { img.style.visibility = ""; }
      });
  }

  function placeFrames(root) {
    if (root.nodeType !== 1) { return; }
    if (root.matches("img.explorer-frame")) { placeFrame(root); return; }
    root.querySelectorAll(".static-explorer img.explorer-frame").forEach(placeFrame);
  }

  // Run in the observer's callback, before the browser paints the new frame.
  function framesChanged(records) {
    records.forEach(function (record) {
      if (record.type === "attributes") {
        if (record.target.tagName === "IMG") { placeFrames(record.target); }
      } else {
        record.addedNodes.forEach(placeFrames);
      }
    });
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
    placeFrames(document.documentElement);
    new MutationObserver(framesChanged).observe(document.documentElement, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ["src", "class"], // a frame's classes may come after its image
    });
    if (narrow) {
      var onChange = function () { placeFrames(document.documentElement); };
      if (narrow.addEventListener) {
        narrow.addEventListener("change", onChange);
      } else if (narrow.addListener) {
        narrow.addListener(onChange);
      }
    }
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
