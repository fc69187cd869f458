/* attnscale site: an inline formula wider than its paragraph (a long one on a phone) gets the
 * class attnscale-wide-math (attnscale.css: a box that scrolls sideways), so that it never
 * widens the page; checked again when the window's width changes (issue 35). */
(function () {
  "use strict";
  var NARROW = 700;  // px: a phone's window
  // the nearest ancestor that is a block: an inline wrapper (MathJax's span) has no width of its own
  function blockOf(el) {
    var box = el.parentElement;
    while (box && window.getComputedStyle(box).display.indexOf("inline") === 0) box = box.parentElement;
    return box;
  }
  function fit() {
    var maths = document.querySelectorAll("div.body mjx-container:not([display='true'])");
    Array.prototype.forEach.call(maths, function (c) {
      var box = blockOf(c);
      if (!box) return;
      c.classList.remove("attnscale-wide-math");
      var r = c.getBoundingClientRect(), b = box.getBoundingClientRect();
      // on a narrow screen every inline formula may end a line it cannot wrap: all are boxed
      // (a known wart: some show a scrollbar of a pixel's overflow); on a wide one, only those
      // wider than their block or running past its right edge
      var narrow = window.innerWidth < NARROW;
      if (narrow || r.width > box.clientWidth || r.right > b.right + 1) {
        c.classList.add("attnscale-wide-math");
      }
    });
  }
  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(fit);
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
