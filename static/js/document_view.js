// Source viewer: bring the cited passage into view, in the text column and (beside a PDF) with the
// page's frame, at any width. The cited sentence carries the link's fragment, so the browser's own
// jump lands on it too; this routine settles each scroll box: every box between the sentence and the
// window puts it a quarter down, then the window shows the viewer whole (beside a PDF) or the
// sentence in its middle. It runs at once, when the page has loaded and when the PDF's first page is
// drawn (pdf_view.mjs), and stops as soon as the reader scrolls or types, so nothing jumps under
// their hand.
(function () {
  "use strict";
  let moved = false;
  ["wheel", "touchstart", "keydown", "mousedown"].forEach(function (name) {
    window.addEventListener(name, function () { moved = true; }, { passive: true, once: true });
  });

  function scrollsItself(node) {
    const style = getComputedStyle(node);
    return /(auto|scroll)/.test(style.overflowY + " " + style.overflowX) &&
      (node.scrollHeight > node.clientHeight || node.scrollWidth > node.clientWidth);
  }

  function scrollWithin(target) {
    for (let node = target.parentElement; node && node !== document.body; node = node.parentElement) {
      if (!scrollsItself(node)) continue;
      const box = node.getBoundingClientRect();
      const place = target.getBoundingClientRect();
      node.scrollTop += place.top - box.top - node.clientHeight / 4;
      if (node.scrollWidth > node.clientWidth) node.scrollLeft += place.left - box.left - 16;
    }
  }

  function focus() {
    if (moved) return;
    const target = document.querySelector("#cited mark.quote") || document.getElementById("cited");
    if (!target) return;
    const viewer = target.closest(".viewer");
    scrollWithin(target);
    if (viewer && viewer.classList.contains("with-pdf")) {
      window.scrollTo(0, viewer.getBoundingClientRect().top + window.scrollY - 8);
    } else {
      target.scrollIntoView({ block: "center" });
    }
  }

  focus();
  window.addEventListener("load", focus, { once: true });
  document.addEventListener("reader:page-drawn", function (event) {
    if (event.detail && event.detail.first) focus();
  });
})();
