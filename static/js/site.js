// Behaviour every page shares, kept out of the HTML so the Content-Security-Policy
// can forbid inline script and inline event handlers everywhere.
(function () {
  "use strict";
  // /page#some-details: a <details> section named in the address opens (e.g. after saving in it).
  const target = window.location.hash && document.getElementById(window.location.hash.slice(1));
  if (target && target.tagName === "DETAILS") target.open = true;
  // <form data-confirm="Delete X?">: ask before submitting.
  document.addEventListener("submit", function (event) {
    const message = event.target.dataset && event.target.dataset.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });
  document.addEventListener("click", function (event) {
    // The navigation collapses into a menu on small screens: the Menu button opens and closes it.
    const toggle = event.target.closest("#nav-toggle");
    if (toggle) {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      toggle.closest(".topbar").classList.toggle("nav-open", open);
    }
    // <input data-select-on-click>: one click selects a secret for copying.
    if (event.target.matches("[data-select-on-click]")) event.target.select();
    // <a data-history-back>: back to the previous page when there is one.
    const back = event.target.closest("[data-history-back]");
    if (back && window.history.length > 1) {
      event.preventDefault();
      window.history.back();
    }
  });
})();
