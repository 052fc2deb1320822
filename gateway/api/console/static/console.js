// Marks each table box that scrolls sideways (its table is wider than the screen), so the hint
// under it shows (console.css); again when the window's width changes. Served as a file: the
// Content-Security-Policy allows no inline script.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll(".table-box").forEach(function (box) {
      box.classList.toggle("scrolls", box.scrollWidth > box.clientWidth + 1);
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("resize", mark);
  document.addEventListener("htmx:afterSettle", mark);
})();
