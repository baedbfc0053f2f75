// A widget image has no alt attribute of its own. Each precomputed explorer of the book
// carries a hidden description of its frames (class "explorer-alt"); copy it into the
// alt attribute of every frame, also of frames the widget manager renders later.
(function () {
  "use strict";
  function describeFrames() {
    document.querySelectorAll(".static-explorer").forEach(function (box) {
      var description = box.querySelector(".explorer-alt");
      var text = description ? description.textContent.trim() : "";
      if (!text) return;
      box.querySelectorAll("img:not([alt])").forEach(function (img) {
        img.setAttribute("alt", text);
      });
    });
  }
  new MutationObserver(describeFrames).observe(document.documentElement, {
    childList: true,
    subtree: true,
  });
  document.addEventListener("DOMContentLoaded", describeFrames);
})();
