/* attnscale site, after MathJax has typeset the page (issues 35 and 45; checked in headless
 * Chromium with scrollbars shown at 400 and 1400 px by tests/test_docs.py):
 *
 * - punctuation right after an inline formula (")", ",", ".") is glued to it (a span that does
 *   not break, class attnscale-glue), so that a line break never leaves it alone on the next line;
 * - an inline formula wider than its block (a long one on a phone) gets the class
 *   attnscale-wide-math (attnscale.css: a box that scrolls sideways, beside its punctuation), so
 *   that it never widens the page; a formula that fits its block is never boxed (no needless
 *   scrollbar). Checked again when the window's width changes. */
(function () {
  "use strict";
  var PUNCT = /^[).,;:!?\]]+/;
  // the nearest ancestor that is a block: an inline wrapper (MathJax's span) has no width of its own
  function blockOf(el) {
    var box = el.parentElement;
    while (box && window.getComputedStyle(box).display.indexOf("inline") === 0) box = box.parentElement;
    return box;
  }
  function room(box) {  // the width of the block's content
    var cs = window.getComputedStyle(box);
    return box.clientWidth - (parseFloat(cs.paddingLeft) || 0) - (parseFloat(cs.paddingRight) || 0);
  }
  function inlineMaths() {
    return document.querySelectorAll("div.body mjx-container:not([display='true'])");
  }
  function glue() {
    Array.prototype.forEach.call(inlineMaths(), function (c) {
      var span = c.closest(".math") || c, next = span.nextSibling;
      if (!next || next.nodeType !== 3 || span.parentElement.classList.contains("attnscale-glue")) return;
      var m = PUNCT.exec(next.nodeValue);
      if (!m) return;
      var g = document.createElement("span");
      g.className = "attnscale-glue";
      span.parentNode.insertBefore(g, span);
      g.appendChild(span);
      g.appendChild(document.createTextNode(m[0]));
      next.nodeValue = next.nodeValue.slice(m[0].length);
    });
  }
  function fit() {
    Array.prototype.forEach.call(inlineMaths(), function (c) {
      var box = blockOf(c), g = c.closest(".attnscale-glue");
      if (!box) return;
      c.classList.remove("attnscale-wide-math");
      if (g) g.classList.remove("attnscale-wide-glue");
      var wide = c.getBoundingClientRect().width > room(box) + 0.5;
      // a formula that, with its punctuation, is wider than its block scrolls in a box that leaves
      // the punctuation room on the same line
      if (wide || (g && g.getBoundingClientRect().width > room(box) + 0.5)) {
        c.classList.add("attnscale-wide-math");
        if (g) g.classList.add("attnscale-wide-glue");
      }
    });
  }
  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(function () { glue(); fit(); });
  }
  window.addEventListener("load", whenTypeset);
  var width = window.innerWidth, timer = null;
  window.addEventListener("resize", function () {
    if (window.innerWidth === width) return;
    width = window.innerWidth;
    clearTimeout(timer);
    timer = setTimeout(fit, 100);
  });
})();
