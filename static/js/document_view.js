// Source viewer: bring the cited passage into view.
(function () {
  "use strict";
  const cited = document.getElementById("cited");
  if (cited) cited.scrollIntoView({ block: "center" });
})();
