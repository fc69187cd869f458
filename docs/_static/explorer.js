/* attnscale: where is my head? The phase-diagram explorer of docs/explorer.md.
 *
 * A self-written script (no library, no network): it reads the page's data document (embedded
 * by docs/_ext/attnscale_explorer.py from docs/explorer-data.json, made by rule explorer_data)
 * and draws SVG. The maths are twins of Python code, checked by tests/test_explorer.py:
 *   betaStar, powerLaw      attnscale/experiments/explorer/grid.py (interpolate_beta_star,
 *                           interpolate_power_law)
 *   RULE_M, gammaEff, side  attnscale/layer/scores/scaling_rules.py and attnscale/cli.py (calibration A)
 *   fmt                     attnscale/cli.py (_num)
 */
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var RHO_START = 0.5;  // the page's first rho: inside the simulated tables' range (issue 45)

  // ------------------------------------------------------------------ interpolation

  function baryWeights(x) {
    var logs = [], signs = [], top = -Infinity;
    for (var j = 0; j < x.length; j++) {
      var s = 0, sg = 1;
      for (var k = 0; k < x.length; k++) {
        if (k === j) continue;
        var t = x[j] - x[k];
        s -= Math.log(Math.abs(t));
        if (t < 0) sg = -sg;
      }
      logs.push(s); signs.push(sg);
      if (s > top) top = s;
    }
    return logs.map(function (s, j) { return signs[j] * Math.exp(s - top); });
  }

  function bary(x, w, f, t) {
    var num = 0, den = 0;
    for (var j = 0; j < x.length; j++) {
      if (x[j] === t) return f[j];
      var c = w[j] / (t - x[j]);
      num += c * f[j]; den += c;
    }
    return num / den;
  }

  function Theory(th) {
    this.th = th;
    this.nodes = th.d_nodes.map(function (node) {
      var Lx = node.n.map(function (n) { return Math.log(n - 1); });
      return { d: node.d, Lx: Lx, wL: baryWeights(Lx), rhoX: node.rho, rhoW: baryWeights(node.rho),
               g0: node.g0, g: node.g };
    });
    this.u = [0].concat(th.d_nodes.map(function (nd) { return 1 / nd.d; }));
    this.wU = baryWeights(this.u);
  }

  // the values of every d-node at one rho (interpolated over the rho-nodes for rho > 0)
  Theory.prototype.slice = function (rho) {
    return this.nodes.map(function (node) {
      if (rho === 0) return node.g0;
      var out = [];
      for (var k = 0; k < node.Lx.length; k++) {
        var col = node.g.map(function (row) { return row[k]; });
        out.push(bary(node.rhoX, node.rhoW, col, rho));
      }
      return out;
    });
  };

  Theory.prototype.betaFromSlice = function (slice, n, d, rho) {
    if (n === 2) return 0;
    var L = Math.log(n - 1), gs = [0];
    for (var i = 0; i < this.nodes.length; i++) {
      gs.push(bary(this.nodes[i].Lx, this.nodes[i].wL, slice[i], L));
    }
    var g = bary(this.u, this.wU, gs, 1 / d);
    return Math.exp(g) * L / (1 - rho);
  };

  Theory.prototype.betaStar = function (n, d, rho) {
    return this.betaFromSlice(this.slice(rho), n, d, rho);
  };

  function powerLaw(table, n, d) {
    var x = table.d.map(Math.log), t = Math.log(d), i = 0;
    while (i < x.length && x[i] < t) i++;  // numpy.searchsorted (left)
    i = Math.min(Math.max(i - 2, 0), x.length - 4);
    var val = 0;
    for (var j = 0; j < 4; j++) {
      var l = 1;
      for (var k = 0; k < 4; k++) {
        if (k !== j) l *= (t - x[i + k]) / (x[i + j] - x[i + k]);
      }
      val += l * table.p[i + j];
    }
    return Math.exp(val + 2 * Math.log(n - 1) / (d - 1));
  }

  // ------------------------------------------------------------------ scaling rules

  // m(n) of every rule attnscale critical knows (attnscale.layer.scores.scaling_rules)
  var RULE_M = {
    qwen: function (n) { return Math.max(1, Math.log(n) / Math.log(8192)); },
    longrope: function (n) { return Math.log(n) / Math.log(4096); },
    llama4: function (n) { return 1 + 0.1 * Math.log1p(Math.floor(n / 8192)); },
    ministral3: function (n) { return 1 + 0.1 * Math.log1p(Math.floor((n - 1) / 16384)); },
    yarn_dynamic: function (n) {
      var t = 1 + 0.1 * Math.log(Math.max(1, n / 4096)); return t * t;
    },
    yarn_static: function () { var t = 1 + 0.1 * Math.log(32); return t * t; },
    infoscale: function (n) {
      return Math.sqrt(1 - Math.pow(n, -2 / 128)) / Math.sqrt(1 - Math.pow(512, -2 / 128));
    },
    ssmax: function (n) { return 0.43 * Math.log(n); }
  };

  function gammaC(rho) { return rho === 0 ? 1 : 1 / (1 - rho); }

  // gamma_eff of a rule at n: calibration A, beta_n = gamma_c ln L m(n); absolute, beta_n = m(n)
  function gammaEff(rule, n, rho) {
    var m = RULE_M[rule.key](n);
    if (rule.calibration === "absolute") return m / Math.log(n);
    return gammaC(rho) * (Math.log(rule.L) * m / Math.log(n));
  }

  function side(ratio) {
    if (ratio === null || !isFinite(ratio)) return null;
    if (Math.round(ratio * 1000) === 1000) return "critical";
    return ratio < 1 ? "sub-critical" : "super-critical";
  }

  // ------------------------------------------------------------------ number formats

  function pyExp(x, digits) {  // Python's f"{x:.{digits}e}"
    var s = x.toExponential(digits), parts = s.split("e");
    var e = parseInt(parts[1], 10);
    return parts[0] + "e" + (e < 0 ? "-" : "+") + (Math.abs(e) < 10 ? "0" : "") + Math.abs(e);
  }

  // attnscale.cli._num: fixed decimals, exponent form where they would hide the number
  function fmt(x, decimals) {
    if (x === null || x === undefined || !isFinite(x)) return "\u2014";
    var a = Math.abs(x);
    if (a >= 1e5 || (a > 0 && a < 0.01)) return pyExp(x, decimals > 3 ? 5 : 2);
    return x.toFixed(decimals);
  }

  function sig(x, digits) {  // a value of the interpolated theory: `digits` significant digits
    if (x === null || !isFinite(x)) return "\u2014";
    if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return pyExp(x, digits - 1);
    var s = x.toPrecision(digits);  // "1.101e+4" for 11010 at 4 digits: written out instead (one
    return s.indexOf("e") < 0 ? s : String(+s);  // format on the page: fixed below 1e5, as fmt)
  }

  function pct(x) { return (x >= 0 ? "+" : "") + (100 * x).toFixed(2) + "%"; }

  // ------------------------------------------------------------------ SVG helpers

  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function h(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function niceTicks(lo, hi, count) {
    var span = hi - lo, step = Math.pow(10, Math.floor(Math.log10(span / count)));
    var err = span / count / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) {
      out.push(Math.abs(v) < 1e-12 * span ? 0 : v);
    }
    return out;
  }

  function logTicks(lo, hi) {  // powers of ten within [lo, hi] (log10 values), thinned
    var a = Math.ceil(lo - 1e-9), b = Math.floor(hi + 1e-9), every = Math.max(1, Math.ceil((b - a + 1) / 6));
    var out = [];
    for (var k = a; k <= b; k += every) out.push(k);
    return out;
  }

  function tickLabel(v, isLog) {
    if (!isLog) return Math.abs(v) >= 1e4 ? pyExp(v, 0) : String(+v.toPrecision(6));
    if (v === 0) return "1";
    if (v === 1) return "10";
    return null;  // 10^k, written with a superscript
  }

  // A chart: SVG whose viewBox matches its box's width in CSS pixels (redrawn on resize), so
  // that its text keeps the page's size on a phone and on a desktop; legend in HTML below it.
  function Chart(parent, opt) {
    this.parent = parent; this.aspect = opt.aspect || 0.68;
    this.m = { l: 52, r: opt.right || 14, t: 10, b: 40 };
    this.xlog = !!opt.xlog; this.ylog = !!opt.ylog;
    this.svg = el("svg", { "class": "ax-chart", role: "img", "aria-label": opt.label || "" }, parent);
    this.legendBox = h("div", { "class": "ax-legend" }, parent);
    this.xlabel = opt.xlabel; this.ylabel = opt.ylabel;
    this.size();
  }

  Chart.prototype.size = function () {
    var w = this.parent.clientWidth;
    var cs = window.getComputedStyle ? window.getComputedStyle(this.parent) : null;
    if (cs) w -= (parseFloat(cs.paddingLeft) || 0) + (parseFloat(cs.paddingRight) || 0);
    this.W = Math.max(260, Math.round(w || 480));
    this.H = Math.round(Math.min(440, Math.max(220, this.W * this.aspect)));
    this.svg.setAttribute("viewBox", "0 0 " + this.W + " " + this.H);
  };

  Chart.prototype.domain = function (x0, x1, y0, y1) {
    this.x0 = this.xlog ? Math.log10(x0) : x0; this.x1 = this.xlog ? Math.log10(x1) : x1;
    this.y0 = this.ylog ? Math.log10(y0) : y0; this.y1 = this.ylog ? Math.log10(y1) : y1;
  };

  Chart.prototype.X = function (x) {
    var v = this.xlog ? Math.log10(x) : x;
    return this.m.l + (v - this.x0) / (this.x1 - this.x0) * (this.W - this.m.l - this.m.r);
  };

  Chart.prototype.Y = function (y) {
    var v = this.ylog ? Math.log10(y) : y;
    return this.H - this.m.b - (v - this.y0) / (this.y1 - this.y0) * (this.H - this.m.t - this.m.b);
  };

  Chart.prototype.clear = function () {
    this.size();
    while (this.svg.firstChild) this.svg.removeChild(this.svg.firstChild);
    el("defs", {}, this.svg).innerHTML =
      '<clipPath id="' + this.clipId() + '"><rect x="' + this.m.l + '" y="' + this.m.t +
      '" width="' + (this.W - this.m.l - this.m.r) + '" height="' + (this.H - this.m.t - this.m.b) +
      '"/></clipPath>';
    this.back = el("g", {}, this.svg);
    this.plot = el("g", { "clip-path": "url(#" + this.clipId() + ")" }, this.svg);
    this.front = el("g", {}, this.svg);
  };

  Chart.prototype.clipId = function () {
    if (!this._clip) this._clip = "ax-clip-" + Math.random().toString(36).slice(2);
    return this._clip;
  };

  Chart.prototype.axes = function () {
    var self = this, g = this.back, x0 = this.m.l, x1 = this.W - this.m.r;
    var y0 = this.H - this.m.b, y1 = this.m.t;
    el("rect", { x: x0, y: y1, width: x1 - x0, height: y0 - y1, "class": "ax-frame" }, g);
    function ticks(isX) {
      var log = isX ? self.xlog : self.ylog, lo = isX ? self.x0 : self.y0, hi = isX ? self.x1 : self.y1;
      var vals = log ? logTicks(lo, hi) : niceTicks(lo, hi, isX ? 5 : 5);
      vals.forEach(function (v) {
        var p = isX ? self.X(log ? Math.pow(10, v) : v) : self.Y(log ? Math.pow(10, v) : v);
        if (isX) el("line", { x1: p, x2: p, y1: y1, y2: y0, "class": "ax-grid" }, g);
        else el("line", { x1: x0, x2: x1, y1: p, y2: p, "class": "ax-grid" }, g);
        var t = el("text", isX ? { x: p, y: y0 + 16, "text-anchor": "middle", "class": "ax-tick" }
          : { x: x0 - 6, y: p + 4, "text-anchor": "end", "class": "ax-tick" }, g);
        var lab = tickLabel(v, log);
        if (lab !== null) { t.textContent = lab; return; }
        t.textContent = "10";
        el("tspan", { dy: -7, "font-size": "10" }, t, String(v));
      });
    }
    ticks(true); ticks(false);
    el("text", { x: (x0 + x1) / 2, y: this.H - 6, "text-anchor": "middle", "class": "ax-label" },
       g, this.xlabel);
    el("text", { x: 14, y: (y0 + y1) / 2, "text-anchor": "middle", "class": "ax-label",
                 transform: "rotate(-90 14 " + (y0 + y1) / 2 + ")" }, g, this.ylabel);
  };

  Chart.prototype.line = function (pts, cls, dash) {
    var self = this, d = "", pen = false;
    pts.forEach(function (p) {
      var ok = isFinite(p[0]) && isFinite(p[1]) && (!self.ylog || p[1] > 0) && (!self.xlog || p[0] > 0);
      if (!ok) { pen = false; return; }
      d += (pen ? "L" : "M") + self.X(p[0]).toFixed(2) + "," + self.Y(p[1]).toFixed(2);
      pen = true;
    });
    var a = { d: d, "class": cls, fill: "none" };
    if (dash) a["stroke-dasharray"] = dash;
    return el("path", a, this.plot);
  };

  // Is (x, y) inside the panel (its domain)? Which side it leaves by, if not: "left", "right",
  // "below", "above" (x first), or "nowhere" for a value that cannot be drawn.
  Chart.prototype.outside = function (x, y) {
    if (!isFinite(x) || !isFinite(y) || (this.ylog && y <= 0) || (this.xlog && x <= 0)) return "nowhere";
    var u = this.xlog ? Math.log10(x) : x, v = this.ylog ? Math.log10(y) : y, eps = 1e-9;
    if (u < Math.min(this.x0, this.x1) - eps) return "left";
    if (u > Math.max(this.x0, this.x1) + eps) return "right";
    if (v < Math.min(this.y0, this.y1) - eps) return "below";
    if (v > Math.max(this.y0, this.y1) + eps) return "above";
    return "";
  };

  // A marker at (x, y), drawn only inside the panel: null outside (the caller says where).
  Chart.prototype.marker = function (x, y, cls, r) {
    if (this.outside(x, y)) return null;
    return el("circle", { cx: this.X(x), cy: this.Y(y), r: r || 5, "class": cls }, this.front);
  };

  Chart.prototype.legend = function (items) {  // [label, class, dash]
    var box = this.legendBox;
    box.innerHTML = "";
    items.forEach(function (it) {
      var item = h("span", { "class": "ax-legend-item" }, box);
      var sw = el("svg", { width: 26, height: 10, viewBox: "0 0 26 10", "aria-hidden": "true" }, item);
      var a = { x1: 1, x2: 25, y1: 5, y2: 5, "class": it[1] };
      if (it[2]) a["stroke-dasharray"] = it[2];
      el("line", a, sw);
      h("span", {}, item, it[0]);
    });
  };

  // viridis, 9 stops
  var VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
                 [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];

  function viridis(t) {
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    var i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }).join(",") + ")";
  }

  // ------------------------------------------------------------------ the page

  function Explorer(root, data) {
    this.root = root; this.data = data;
    this.theory = new Theory(data.theory);
    this.rules = data.rules;
    // opens inside the simulated phase diagram's rho range (RHO_START: its tables run 0.05 .. 0.9)
    this.state = { d: 128, n: 131072, rho: RHO_START, rule: data.rules[0].key, panel: "auto" };
    this.spec = {};
    this.build();
    this.readHash();
    this.showMessages();
    this.update();
    var self = this;
    window.addEventListener("hashchange", function () {  // an address typed or pasted later
      self.readHash();
      self.showMessages();
      self.update();
    });
  }

  // The head in the address (#d=128&n=131072&rho=0.5&rule=qwen): a value that is empty, not a
  // number or outside the range is not used silently; a message next to its control says what
  // was given and what is used (this.messages, shown by showMessages).
  Explorer.prototype.readHash = function () {
    var self = this, s = this.state;
    this.messages = {};
    (window.location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("="), key = i < 0 ? kv : kv.slice(0, i);
      var v = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1));
      if (key === "rule") {
        if (self.rules.some(function (r) { return r.key === v; })) s.rule = v;
        else self.messages.rule = "The address names no rule \u201c" + v + "\u201d: using " +
          self.rules.filter(function (r) { return r.key === s.rule; })[0].name + ".";
        return;
      }
      var spec = self.spec[key];
      if (!spec) return;
      var got = self.check(key, v);
      s[key] = got.value;
      if (got.message) self.messages[key] = "In the address: " + got.message;
    });
  };

  // A typed value of control `key` (a string): the value to use and, unless the string is a
  // number in the range, a message that says what was given and what is used instead. Empty is
  // not zero: the current value stays.
  Explorer.prototype.check = function (key, text) {
    var spec = this.spec[key], cur = this.state[key], txt = String(text).trim();
    var sym = spec.symbol, range = spec.rangeText;
    if (txt === "") return { value: cur, message: sym + " is empty: still using " + sym + " = " + cur + "." };
    // a decimal comma ("0,3") is a decimal point; a comma anywhere else is not a number
    if (/^[+-]?\d*,\d+$/.test(txt)) txt = txt.replace(",", ".");
    var v = Number(txt);
    if (!isFinite(v)) {
      return { value: cur, message: "\u201c" + txt + "\u201d is not a number: still using " + sym + " = " + cur + "." };
    }
    if (v < spec.lo || v > spec.hi) {
      var used = v < spec.lo ? spec.lo : spec.hi;
      return { value: used, message: sym + " = " + txt + " is outside " + range + ": using " + sym +
               " = " + used + " (the nearest end)." + (spec.beyond || "") };
    }
    if (spec.integer && v !== Math.round(v)) {
      return { value: Math.round(v), message: sym + " is a whole number: using " + sym + " = " + Math.round(v) + "." };
    }
    return { value: v, message: "" };
  };

  Explorer.prototype.writeHash = function () {
    var s = this.state;
    var hash = "#d=" + s.d + "&n=" + s.n + "&rho=" + s.rho + "&rule=" + s.rule;
    if (window.history && window.history.replaceState) window.history.replaceState(null, "", hash);
  };

  // One control: a slider and a number box, kept in step, each with a visible label. The slider
  // runs over integer positions 0 .. opt.positions, mapped to values (log10-spaced for opt.log), so
  // that its two ends are exactly lo and hi; aria-valuetext says the value, not the position.
  Explorer.prototype.control = function (box, key, label, lo, hi, opt) {
    var self = this, wrap = h("div", { "class": "ax-control" }, box);
    var id = "ax-" + key, N = opt.positions;
    var a = opt.log ? Math.log10(lo) : lo, b = opt.log ? Math.log10(hi) : hi;
    this.spec[key] = { lo: lo, hi: hi, integer: opt.integer, symbol: opt.symbol,
                       rangeText: opt.rangeText, beyond: opt.beyond };
    h("label", { "for": id + "-slider", id: id + "-label" }, wrap, label);
    var row = h("div", { "class": "ax-control-row" }, wrap);
    var slider = h("input", { type: "range", id: id + "-slider", min: 0, max: N, step: 1,
                              "aria-describedby": id + "-note" }, row);
    h("label", { "for": id, "class": "ax-box-label" }, row, opt.symbol + " =");
    var num = h("input", { type: "text", id: id, autocomplete: "off", spellcheck: "false",
                           inputmode: opt.integer ? "numeric" : "decimal",
                           "aria-describedby": id + "-msg " + id + "-note" }, row);
    var msg = h("div", { "class": "ax-msg", id: id + "-msg", role: "status", "aria-live": "polite" }, wrap);
    var note = h("div", { "class": "ax-note", id: id + "-note" }, wrap, opt.note || "");
    function toPos(v) {
      var x = opt.log ? Math.log10(v) : v;
      return Math.max(0, Math.min(N, Math.round((x - a) / (b - a) * N)));
    }
    function fromPos(k) {
      if (k <= 0) return lo;
      if (k >= N) return hi;
      var x = a + (b - a) * k / N, v = opt.log ? Math.pow(10, x) : x;
      return opt.integer ? Math.round(v) : +v.toFixed(opt.decimals);
    }
    function show(v) {
      slider.value = toPos(v);
      slider.setAttribute("aria-valuetext", opt.symbol + " = " + v);
    }
    function say(text) {
      msg.textContent = text || "";
      if (text) num.setAttribute("aria-invalid", "true"); else num.removeAttribute("aria-invalid");
    }
    slider.addEventListener("input", function () {
      var v = fromPos(+slider.value);
      self.state[key] = v; num.value = v; say("");
      slider.setAttribute("aria-valuetext", opt.symbol + " = " + v);
      self.update();
    });
    num.addEventListener("change", function () {
      var got = self.check(key, num.value);  // the box then shows the value used, the message why
      self.state[key] = got.value; num.value = got.value; say(got.message);
      show(got.value);
      self.update();
    });
    num.addEventListener("input", function () {  // live while the typed value is a valid one;
      var got = self.check(key, num.value);     // the message always says what the box holds now
      if (!got.message) {
        self.state[key] = got.value; say(""); show(got.value); self.update();
      } else {
        say(got.message.replace(/: (still )?using /, ": on Enter, using "));
      }
    });
    this.controls[key] = { set: function (v, message) { self.state[key] = v; num.value = v; show(v); say(message); },
                           slider: slider, box: num, msg: msg };
    this.controls[key].set(this.state[key], "");
    this.inputs[key] = num;
    return note;
  };

  // Shows the address's messages (readHash) next to their controls and puts every control's
  // value in step with the state.
  Explorer.prototype.showMessages = function () {
    var self = this;
    ["d", "n", "rho"].forEach(function (k) {
      self.controls[k].set(self.state[k], self.messages[k] || "");
    });
    this.inputs.rule.value = this.state.rule;
    this.ruleMsg.textContent = this.messages.rule || "";
  };

  Explorer.prototype.build = function () {
    var self = this, th = this.data.theory, root = this.root;
    root.innerHTML = "";
    this.inputs = {}; this.controls = {};
    var controls = h("div", { "class": "ax-controls" }, root);
    var nMax = pyExp(th.n_max, 0).replace("e+0", "e");
    this.control(controls, "d", "Head dimension d", th.d_min, th.d_max,
                 { log: true, integer: true, step: 1, positions: 1000, symbol: "d",
                   rangeText: th.d_min + " \u2013 " + th.d_max, note: th.d_min + " \u2013 " + th.d_max });
    this.control(controls, "n", "Context length n (keys per query)", 2, th.n_max,
                 { log: true, integer: true, step: 1, positions: 1000, symbol: "n",
                   rangeText: "2 \u2013 " + nMax, note: "2 \u2013 " + nMax });
    var rhoNote = this.control(controls, "rho", "Mean token cosine \u03c1", 0, th.rho_max,
                 { integer: false, step: 0.001, positions: Math.round(th.rho_max / 0.005), decimals: 4,
                   symbol: "\u03c1", rangeText: "0 \u2013 " + th.rho_max,
                   beyond: " For a larger \u03c1 use the command, which takes any \u03c1 < 1.",
                   note: "0 \u2013 " + th.rho_max + " (the grid's range; beyond, use the command). " });
    h("span", {}, rhoNote, "Your head's \u03c1 from its keys: ");
    h("code", {}, rhoNote, "attnscale estimate-rho keys.npy");
    h("span", {}, rhoNote, " (");
    h("a", { href: "ask-the-theory.html#estimate-rho-from-tokens" }, rhoNote, "how");
    h("span", {}, rhoNote, ").");
    var rc = h("div", { "class": "ax-control" }, controls);
    h("label", { "for": "ax-rule" }, rc, "Scaling rule");
    var sel = h("select", { id: "ax-rule" }, rc);
    this.rules.forEach(function (r) {
      h("option", { value: r.key }, sel, r.name + (r.calibration === "absolute" ? " [absolute]" : ""));
    });
    sel.value = this.state.rule;
    sel.addEventListener("change", function () { self.state.rule = sel.value; self.ruleMsg.textContent = ""; self.update(); });
    this.inputs.rule = sel;
    this.ruleMsg = h("div", { "class": "ax-msg", id: "ax-rule-msg", role: "status", "aria-live": "polite" }, rc);
    h("div", { "class": "ax-note" }, rc, "calibration A: critical by Paper A at its length L");

    var top = h("div", { "class": "ax-grid2" }, root);
    var left = h("div", { "class": "ax-card" }, top);
    h("h3", {}, left, "Your head");
    this.verdict = h("p", { "class": "ax-verdict", id: "ax-verdict", role: "status", "aria-live": "polite",
                            "aria-atomic": "true" }, left);
    this.summary = h("dl", { "class": "ax-summary" }, left);
    this.command = h("p", { "class": "ax-command" }, left);
    var right = h("div", { "class": "ax-card" }, top);
    h("h3", {}, right, "Where each scaling rule puts it");
    this.rulesBox = h("div", { "class": "ax-table-wrap" }, right);
    h("p", { "class": "ax-note" }, right,
      "ratio = \u03b3_eff / \u03b3*: below 1 sub-critical (weights spread over many keys), above 1 " +
      "super-critical (each token keeps its own weight); critical when it rounds to 1.000. " +
      "Click a row (or Tab to it and press Enter) to draw that rule.");

    var charts = h("div", { "class": "ax-grid2" }, root);
    var c1 = h("div", { "class": "ax-card" }, charts);
    h("h3", {}, c1, "Critical scale \u03b2 against n");
    this.betaChart = new Chart(c1, { xlog: true, ylog: true, xlabel: "n (keys per query)",
                                     ylabel: "\u03b2", label: "beta against n" });
    var c2 = h("div", { "class": "ax-card" }, charts);
    h("h3", {}, c2, "\u03b3 = \u03b2 / ln n against n");
    this.gammaChart = new Chart(c2, { xlog: true, ylog: false, xlabel: "n (keys per query)",
                                      ylabel: "\u03b3", label: "gamma against n" });

    var hm = h("div", { "class": "ax-card ax-wide" }, root);
    var head = h("div", { "class": "ax-panel-head" }, hm);
    this.panelTitle = h("h3", {}, head, "Simulated \u03bb phase diagram");
    var ps = h("select", { id: "ax-panel", "aria-label": "simulated table" }, head);
    h("option", { value: "auto" }, ps, "nearest d");
    this.data.lambda.forEach(function (p, k) {
      h("option", { value: String(k) }, ps, "d = " + p.d + ", n = " + p.n + " (" + p.source.split("/").pop() + ")");
    });
    ps.addEventListener("change", function () { self.state.panel = ps.value; self.update(); });
    this.inputs.panel = ps;
    this.heat = new Chart(hm, { aspect: 0.55, right: 56, xlog: false, ylog: true, xlabel: "\u03c1",
                                ylabel: "\u03b3 = \u03b2 / ln n", label: "simulated lambda" });
    this.heatWhere = h("p", { "class": "ax-note ax-where", id: "ax-heat-where", role: "status", "aria-live": "polite" }, hm);
    this.heatNote = h("p", { "class": "ax-note" }, hm);
    this.footer = h("p", { "class": "ax-note ax-source" }, root);
    this.renderFooter();
  };

  Explorer.prototype.renderFooter = function () {
    var src = this.data.source, acc = this.data.accuracy;
    var worst = acc.max_abs_rel_error;
    this.footer.textContent = "Data: commit " +
      String(src.git_commit).slice(0, 10) + ". Theory grid: " + this.data.theory.d_nodes.length +
      " d-nodes; largest interpolation error at " + acc.points.length + " held-out points " +
      (worst === null ? "\u2014" : pyExp(worst, 1)) + " (bound " + acc.bound + ").";
    if (worst !== null && worst > acc.bound) {
      h("strong", { "class": "ax-warn" }, this.footer, " This build's data exceed the bound (a small " +
        "configuration, such as the smoke run's): the numbers are rough.");
    }
    document.querySelectorAll("[data-ax]").forEach(function (span) {
      var k = span.getAttribute("data-ax");
      if (k === "max-error") span.textContent = worst === null ? "\u2014" : pyExp(worst, 1);
      if (k === "heldout") span.textContent = String(acc.points.length);
      if (k === "bound") span.textContent = String(acc.bound);
      if (k === "jump") span.textContent = pct(acc.route_jump.rel);
      if (k === "jump-at") span.textContent = "d = " + acc.route_jump.d + ", n = " + acc.route_jump.n;
      if (k === "worst" && acc.worst) {
        span.textContent = "d = " + acc.worst.d + ", n = " + acc.worst.n + ", \u03c1 = " + acc.worst.rho;
      }
    });
  };

  Explorer.prototype.currentRule = function () {
    var key = this.state.rule;
    return this.rules.filter(function (r) { return r.key === key; })[0];
  };

  // every number of the head, as attnscale critical prints it (beta* interpolated)
  Explorer.prototype.report = function () {
    var s = this.state, n = s.n, d = s.d, rho = s.rho;
    var slice = this.theory.slice(rho);
    var beta = this.theory.betaFromSlice(slice, n, d, rho), lnN = Math.log(n);
    var gstar = beta / lnN, gc = gammaC(rho);
    var paperA = gc * lnN, pl = powerLaw(this.data.power_law, n, d);
    var rules = this.rules.map(function (r) {
      var m = RULE_M[r.key](n), ge = gammaEff(r, n, rho), ratio = gstar > 0 ? ge / gstar : null;
      return { key: r.key, name: r.name, calibration: r.calibration, m: m, gamma_eff: ge,
               ratio: ratio, side: side(ratio) };
    });
    return { n: n, d: d, rho: rho, slice: slice, beta_star: beta, gamma_star: gstar, gamma_c: gc,
             ratio_c: gstar / gc, paper_a: paperA, power_law: pl, ln_n_over_d: lnN / d, rules: rules };
  };

  Explorer.prototype.update = function () {
    var r = this.report();
    this.last = r;
    this.renderSummary(r);
    this.renderRules(r);
    this.renderBeta(r);
    this.renderGamma(r);
    this.renderHeat(r);
    this.writeHash();
    this.root.setAttribute("data-ready", "1");
  };

  Explorer.prototype.renderSummary = function (r) {
    var dl = this.summary, key = this.state.rule, v = this.verdict;
    var sel = r.rules.filter(function (x) { return x.key === key; })[0];
    v.innerHTML = "";
    h("span", {}, v, sel.name + (sel.side ? " puts it " : ": "));
    if (sel.side) {
      h("span", { "class": "ax-chip ax-" + sel.side }, v, sel.side);
      h("span", {}, v, ", \u03b3_eff / \u03b3* = " + fmt(sel.ratio, 3));
    } else {
      h("span", {}, v, "no ratio at n = 2 (\u03b2* = 0)");
    }
    dl.innerHTML = "";
    function row(key, label, value, raw) {
      var dt = h("dt", {}, dl, label);
      var dd = h("dd", { id: "ax-out-" + key }, dl, value);
      if (raw !== undefined) dd.setAttribute("data-value", String(raw));
      return dt;
    }
    row("beta_star", "\u03b2* (finite-d theory)", sig(r.beta_star, 5), r.beta_star);
    row("gamma_star", "\u03b3* = \u03b2* / ln n", sig(r.gamma_star, 4), r.gamma_star);
    row("gamma_c", "\u03b3_c = 1 / (1 \u2212 \u03c1)", fmt(r.gamma_c, 4), r.gamma_c);
    row("ratio_c", "\u03b3* / \u03b3_c", sig(r.ratio_c, 4), r.ratio_c);
    row("paper_a", "Paper A, \u03b3_c ln n", fmt(r.paper_a, 4) + "  (" +
        (r.beta_star > 0 ? pct(r.paper_a / r.beta_star - 1) : "\u2014") + ")", r.paper_a);
    row("power_law", "Paper B power law", sig(r.power_law, 5) + "  (" +
        (r.beta_star > 0 ? pct(r.power_law / r.beta_star - 1) : "\u2014") + ")", r.power_law);
    row("ln_n_over_d", "ln n / d", r.ln_n_over_d.toFixed(3), r.ln_n_over_d);
    this.command.innerHTML = "";
    h("span", {}, this.command, "Exact, with every approximation: ");
    h("code", {}, this.command, "attnscale critical --d " + r.d + " --n " + r.n +
      (r.rho === 0 ? "" : " --rho " + r.rho));
    if (r.n === 2) h("span", { "class": "ax-note" }, this.command, " (n = 2: \u03b2* = 0, A_ii \u2265 1/2)");
  };

  Explorer.prototype.renderRules = function (r) {
    var self = this, box = this.rulesBox, act = document.activeElement;
    var focused = act && box.contains(act) ? act.getAttribute("data-rule") : null;
    box.innerHTML = "";
    var t = h("table", { "class": "ax-rules" }, box);
    var hr = h("tr", {}, h("thead", {}, t));
    ["rule", "m(n)", "\u03b3_eff", "ratio", ""].forEach(function (c) { h("th", {}, hr, c); });
    var tb = h("tbody", {}, t);
    r.rules.forEach(function (rule) {
      var chosen = rule.key === self.state.rule;
      // a row is a control: reachable by Tab, chosen by Enter or Space as by a click (issue 45)
      var tr = h("tr", { "data-rule": rule.key, "class": chosen ? "ax-selected" : "", tabindex: "0",
                         "aria-current": chosen ? "true" : "false",
                         "aria-label": "draw " + rule.name }, tb);
      h("td", { "class": "ax-rule-name" }, tr, rule.name + (rule.calibration === "absolute" ? " [absolute]" : ""));
      h("td", { "class": "ax-num", "data-value": rule.m }, tr, fmt(rule.m, 4));
      h("td", { "class": "ax-num", "data-value": rule.gamma_eff }, tr, fmt(rule.gamma_eff, 4));
      h("td", { "class": "ax-num", "data-value": rule.ratio === null ? "" : rule.ratio }, tr,
        rule.ratio === null ? "\u2014" : fmt(rule.ratio, 3));
      var sd = h("td", { "class": "ax-side" }, tr);
      if (rule.side) h("span", { "class": "ax-chip ax-" + rule.side }, sd, rule.side);
      function choose() { self.state.rule = rule.key; self.inputs.rule.value = rule.key; self.update(); }
      tr.addEventListener("click", choose);
      tr.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " " || e.key === "Spacebar") { e.preventDefault(); choose(); }
      });
    });
    if (focused) {  // the table was redrawn: the focus stays on the same rule's row
      var again = box.querySelector("tr[data-rule='" + focused + "']");
      if (again) again.focus();
    }
  };

  function logRange(vals, pad) {
    var lo = Infinity, hi = -Infinity;
    vals.forEach(function (v) { if (isFinite(v) && v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (!isFinite(lo)) return [0.1, 10];
    if (hi / lo < 10) { var mid = Math.sqrt(hi * lo); lo = Math.min(lo, mid / 3.2); hi = Math.max(hi, mid * 3.2); }
    return [lo / pad, hi * pad];
  }

  Explorer.prototype.nGrid = function () {
    var out = [], nmax = this.data.theory.n_max;
    for (var k = 0; k <= 160; k++) {
      var n = Math.round(Math.pow(10, Math.log10(3) + k / 160 * (Math.log10(nmax) - Math.log10(3))));
      if (!out.length || n > out[out.length - 1]) out.push(n);
    }
    return out;
  };

  Explorer.prototype.curves = function (r) {
    var self = this, ns = this.nGrid(), rule = this.currentRule();
    var rows = ns.map(function (n) {
      var b = self.theory.betaFromSlice(r.slice, n, r.d, r.rho), ln = Math.log(n);
      return { n: n, beta: b, paperA: gammaC(r.rho) * ln, pl: powerLaw(self.data.power_law, n, r.d),
               rule: gammaEff(rule, n, r.rho) * ln, ln: ln };
    });
    return { rows: rows, rule: rule };
  };

  Explorer.prototype.renderBeta = function (r) {
    var c = this.betaChart, cv = this.curves(r), rows = cv.rows;
    var core = [gammaEff(cv.rule, r.n, r.rho) * Math.log(r.n)];  // the rule's curve may leave the box
    rows.forEach(function (p) { core.push(p.beta, p.paperA); });
    var yr = logRange(core, 1.6);
    c.domain(2, this.data.theory.n_max, yr[0], yr[1]);
    c.clear(); c.axes();
    c.line(rows.map(function (p) { return [p.n, p.pl]; }), "ax-l-pl", "2 4");
    c.line(rows.map(function (p) { return [p.n, p.paperA]; }), "ax-l-papera", "7 4");
    c.line(rows.map(function (p) { return [p.n, p.rule]; }), "ax-l-rule");
    c.line(rows.map(function (p) { return [p.n, p.beta]; }), "ax-l-theory");
    var x = c.X(r.n);
    el("line", { x1: x, x2: x, y1: c.m.t, y2: c.H - c.m.b, "class": "ax-l-head" }, c.plot);
    var m = c.marker(r.n, r.beta_star, "ax-m-theory");
    if (m) m.setAttribute("id", "ax-head-beta");
    c.marker(r.n, gammaEff(cv.rule, r.n, r.rho) * Math.log(r.n), "ax-m-rule", 4);
    c.legend([["\u03b2* finite d", "ax-l-theory"], ["Paper A \u03b3_c ln n", "ax-l-papera", "7 4"],
              ["Paper B power law", "ax-l-pl", "2 4"], [cv.rule.name, "ax-l-rule"]]);
  };

  Explorer.prototype.renderGamma = function (r) {
    var c = this.gammaChart, cv = this.curves(r), rows = cv.rows.filter(function (p) { return p.n >= 3; });
    var gs = [r.gamma_c, gammaEff(cv.rule, r.n, r.rho)];  // the rule's curve may leave the box
    rows.forEach(function (p) { gs.push(p.beta / p.ln); });
    var lo = Math.min.apply(null, gs.filter(isFinite)), hi = Math.max.apply(null, gs.filter(isFinite));
    c.ylog = hi / Math.max(lo, 1e-9) > 8 && lo > 0;
    if (c.ylog) { c.domain(2, this.data.theory.n_max, lo / 1.3, hi * 1.3); }
    else { var pad = 0.12 * (hi - lo || 0.5 * hi); c.domain(2, this.data.theory.n_max, Math.max(0, lo - pad), hi + pad); }
    c.clear(); c.axes();
    c.line(rows.map(function (p) { return [p.n, p.pl / p.ln]; }), "ax-l-pl", "2 4");
    c.line(rows.map(function (p) { return [p.n, r.gamma_c]; }), "ax-l-papera", "7 4");
    c.line(rows.map(function (p) { return [p.n, p.rule / p.ln]; }), "ax-l-rule");
    c.line(rows.map(function (p) { return [p.n, p.beta / p.ln]; }), "ax-l-theory");
    var x = c.X(r.n);
    el("line", { x1: x, x2: x, y1: c.m.t, y2: c.H - c.m.b, "class": "ax-l-head" }, c.plot);
    if (r.n > 2) {
      c.marker(r.n, r.gamma_star, "ax-m-theory");
      c.marker(r.n, gammaEff(cv.rule, r.n, r.rho), "ax-m-rule", 4);
    }
    c.legend([["\u03b3* finite d", "ax-l-theory"], ["Paper A \u03b3_c", "ax-l-papera", "7 4"],
              ["power law / ln n", "ax-l-pl", "2 4"], ["\u03b3_eff, " + cv.rule.name, "ax-l-rule"]]);
  };

  Explorer.prototype.panel = function () {
    var panels = this.data.lambda, s = this.state;
    if (!panels.length) return null;
    if (s.panel !== "auto") return panels[+s.panel];
    var best = null, score = Infinity;
    panels.forEach(function (p) {  // nearest in ln d, then in ln n; ties to the larger d
      var sc = Math.abs(Math.log(p.d / s.d)) * 1e3 + Math.abs(Math.log(p.n / Math.max(s.n, 2))) - p.d * 1e-9;
      if (sc < score - 1e-12) { score = sc; best = p; }
    });
    return best;
  };

  Explorer.prototype.renderHeat = function (r) {
    var c = this.heat, p = this.panel();
    if (!p) {
      c.clear();
      this.heatKey = null;
      this.heatNote.textContent = "No simulated table in this build's data.";
      return;
    }
    this.shownPanel = p;
    var key = p.source + "|" + p.d + "|" + p.n + "|" + this.heat.parent.clientWidth;
    if (key !== this.heatKey) {  // the cells and lines depend on the panel and the width only
      this.drawHeatPanel(p);
      this.heatKey = key;
    }
    var lineNote = this.heatLineNote;
    var over = this.heatOverlay;
    while (over.firstChild) over.removeChild(over.firstChild);
    var front = c.front;
    c.front = over;  // the head's markers go to the overlay, redrawn at every change
    var rule = this.currentRule();
    var ge = gammaEff(rule, r.n, r.rho);
    var gx = c.marker(r.rho, r.gamma_star, "ax-m-theory-open", 6);
    var rx = c.marker(r.rho, ge, "ax-m-rule", 5);
    c.front = front;
    var where = [];
    if (!gx) where.push(this.placeNote(c, "your head's \u03b3* = " + sig(r.gamma_star, 4), r.rho, r.gamma_star));
    if (!rx) where.push(this.placeNote(c, rule.name + "'s \u03b3_eff = " + sig(ge, 4), r.rho, ge));
    this.heatWhere.textContent = where.length ? "Not drawn on the panel: " + where.join("; ") + "." : "";
    this.heatNote.textContent = "Mean angle ratio \u03bb over " + (p.trials || "?") +
      " token draws per cell (" + p.source + "; \u03bb \u2248 1: identity, \u2248 0: collapse). " +
      "Open circle: your head's \u03b3*(n = " + r.n + ", d = " + r.d + "); filled: " + rule.name +
      ". The panel is the simulated d nearest to yours; other d and n: the menu." + lineNote;
  };

  // Where a point the heat map cannot show lies: its (rho, gamma) and the panel's ranges.
  Explorer.prototype.placeNote = function (c, what, rho, gamma) {
    var side = c.outside(rho, gamma), p = this.shownPanel;
    var r0 = p.rho[0], r1 = p.rho[p.rho.length - 1], g0 = p.gamma[0], g1 = p.gamma[p.gamma.length - 1];
    if (side === "nowhere") return what + " (no value)";
    if (side === "left" || side === "right") {
      return what + " at \u03c1 = " + rho + ", " + (side === "left" ? "below" : "above") +
        " the panel's \u03c1 range " + r0 + " \u2013 " + r1;
    }
    return what + " at \u03c1 = " + rho + ", " + side + " the panel's \u03b3 range " + sig(g0, 3) +
      " \u2013 " + sig(g1, 3);
  };

  Explorer.prototype.drawHeatPanel = function (p) {
    var c = this.heat;
    var g0 = p.gamma[0], g1 = p.gamma[p.gamma.length - 1], r0 = p.rho[0], r1 = p.rho[p.rho.length - 1];
    var dr = (r1 - r0) / (p.rho.length - 1), lg = (Math.log10(g1) - Math.log10(g0)) / (p.gamma.length - 1);
    c.domain(r0 - dr / 2, r1 + dr / 2, Math.pow(10, Math.log10(g0) - lg / 2), Math.pow(10, Math.log10(g1) + lg / 2));
    c.clear(); c.axes();
    var cells = el("g", {}, c.plot);
    p.rho.forEach(function (rho, i) {
      p.gamma.forEach(function (gam, j) {
        var v = p.lambda[i][j];
        if (v === null) return;
        var xa = c.X(rho - dr / 2), xb = c.X(rho + dr / 2);
        var ya = c.Y(Math.pow(10, Math.log10(gam) + lg / 2)), yb = c.Y(Math.pow(10, Math.log10(gam) - lg / 2));
        el("rect", { x: xa.toFixed(2), y: ya.toFixed(2), width: (xb - xa + 0.4).toFixed(2),
                     height: (yb - ya + 0.4).toFixed(2), fill: viridis(v) }, cells);
      });
    });
    var rr = [];
    for (var k = 0; k <= 120; k++) rr.push(r0 - dr / 2 + (r1 - r0 + dr) * k / 120);
    c.line(rr.map(function (x) { return [x, gammaC(x)]; }), "ax-l-gc", "7 4");
    this.heatLineNote = "";
    if (p.d >= this.data.theory.d_min && p.n <= this.data.theory.n_max) {
      var th = this.theory, rmax = this.data.theory.rho_max;
      c.line(rr.filter(function (x) { return x >= 0 && x <= rmax; }).map(function (x) {
        return [x, th.betaStar(p.n, p.d, x) / Math.log(p.n)];
      }), "ax-l-fd");
    } else {
      this.heatLineNote = " No finite-d line: the theory needs d \u2265 " + this.data.theory.d_min + ".";
    }
    // colour bar
    var bx = c.W - c.m.r + 10, by0 = c.m.t, by1 = c.H - c.m.b;
    for (var b = 0; b < 50; b++) {
      el("rect", { x: bx, y: by1 - (by1 - by0) * (b + 1) / 50, width: 12, height: (by1 - by0) / 50 + 0.5,
                   fill: viridis(b / 49) }, c.front);
    }
    [0, 0.5, 1].forEach(function (v) {
      el("text", { x: bx + 16, y: by1 - (by1 - by0) * v + 4, "class": "ax-tick" }, c.front, String(v));
    });
    el("text", { x: bx + 6, y: by1 + 18, "class": "ax-label", "text-anchor": "middle" }, c.front, "\u03bb");
    var items = [["Paper A \u03b3_c", "ax-l-gc", "7 4"]];
    if (!this.heatLineNote) items.push(["finite-d \u03b3*, this panel", "ax-l-fd"]);
    c.legend(items);
    this.panelTitle.textContent = "Simulated \u03bb, d = " + p.d + ", n = " + p.n;
    this.heatOverlay = el("g", {}, c.svg);
  };

  // ------------------------------------------------------------------ start

  function start() {
    var root = document.getElementById("attnscale-explorer");
    var src = document.getElementById("attnscale-explorer-data");
    if (!root || !src) return;
    var data = JSON.parse(src.textContent);
    if (data.format !== 1) {
      root.textContent = "The explorer's data has format " + data.format + "; this script reads format 1.";
      return;
    }
    var ex = new Explorer(root, data), width = root.clientWidth, timer = null;
    window.addEventListener("resize", function () {
      if (root.clientWidth === width) return;
      width = root.clientWidth;
      clearTimeout(timer);
      timer = setTimeout(function () { ex.update(); }, 120);
    });
    window.attnscaleExplorer = {
      explorer: ex, betaStar: function (n, d, rho) { return ex.theory.betaStar(n, d, rho); },
      powerLaw: function (n, d) { return powerLaw(data.power_law, n, d); },
      ruleM: function (key, n) { return RULE_M[key](n); },
      gammaEff: function (key, n, rho) {
        return gammaEff(data.rules.filter(function (r) { return r.key === key; })[0], n, rho);
      },
      fmt: fmt, side: side, hasRule: function (key) { return typeof RULE_M[key] === "function"; }
    };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
