/* attnscale site: an inline formula wider than its paragraph (a long one on a phone) gets the
 * class attnscale-wide-math (attnscale.css: a box that scrolls sideways), so that it never
 * widens the page; checked again when the window's width changes (issue 35). */
(function () {
  "use strict";
  function fit() {
    var maths = document.querySelectorAll("div.body mjx-container:not([display='true'])");
    Array.prototype.forEach.call(maths, function (c) {
      var box = c.parentElement;
      if (!box) return;
      c.classList.remove("attnscale-wide-math");
      if (c.getBoundingClientRect().width > box.clientWidth) c.classList.add("attnscale-wide-math");
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
