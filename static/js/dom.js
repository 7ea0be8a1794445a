// DOM helpers the page scripts share (chat.js, collection.js). Loaded before them, without defer,
// because they run as the page is parsed.
window.KnowledgeDom = (function () {
  "use strict";
  // <tag class="cls">text</tag>; text goes in as text, never as HTML.
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  return { el: el };
})();
