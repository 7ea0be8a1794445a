// Source viewer: bring the cited passage into view. Beside a PDF the passage column scrolls on
// its own (the page's script brings the quoted sentence into view), so only the column moves.
(function () {
  "use strict";
  const cited = document.getElementById("cited");
  if (!cited) return;
  const column = cited.closest(".passage");
  if (column && column.scrollHeight > column.clientHeight && getComputedStyle(column).overflowY === "auto") {
    column.scrollTop += cited.getBoundingClientRect().top - column.getBoundingClientRect().top - 16;
    return;
  }
  if (!document.getElementById("pdf-view")) cited.scrollIntoView({ block: "center" });
})();
