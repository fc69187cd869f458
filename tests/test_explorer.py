"""The phase-diagram explorer (issue 29; docs/explorer.md).

* The grid's nodes and its interpolant (:mod:`attnscale.experiments.explorer.grid`): barycentric
  interpolation is exact for polynomials and at nodes, the node choices are what the
  configuration says, and the published grid (``docs/explorer-data.json``, a default run's) is
  within the stated bound of ``attnscale.layer.finite_d.critical_beta`` at points that are
  neither nodes nor the pipeline's held-out points, at the edges of the range too.
* The published data come from a default run, match the configuration and the library (rules,
  power law), and pass :func:`attnscale.experiments.explorer.data.check_data`; ``publish``
  refuses anything else. The smoke run's data have the published layout.
* In a real browser (headless Chromium; skipped where it is missing, required in CI): the page
  loads with no console error, setting the controls to three heads shows
  ``attnscale.cli.critical_report``'s beta* within the bound and the same m(n), gamma_eff, ratio
  and sub/critical/super-critical labels, the page's script gives the Python twins' numbers, and
  at phone width (390 px) nothing overflows sideways.
"""

from __future__ import annotations

import json
import math
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from test_docs import browser_probe, served, site  # noqa: F401  (site and server shared)

from attnscale.experiments.explorer import data as xdata
from attnscale.experiments.explorer import grid
from conftest import REPO, require_program

PUBLISHED = REPO / "docs" / "explorer-data.json"


def _published() -> dict:
    return json.loads(PUBLISHED.read_text(encoding="utf-8"))


def _config() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["explorer"]


# --------------------------------------------------------------------------- interpolation


def test_barycentric_is_exact_for_polynomials_and_at_nodes():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-1.0, 3.0, 9))
    coef = rng.normal(size=9)  # degree 8 through 9 nodes: reproduced exactly
    w = grid.barycentric_weights(x)
    for t in rng.uniform(-1.0, 3.0, 20):
        assert grid.barycentric(x, w, np.polyval(coef, x), t) == pytest.approx(
            np.polyval(coef, t), rel=1e-10, abs=1e-10
        )
    f = rng.normal(size=9)
    assert [grid.barycentric(x, w, f, t) for t in x] == list(f)  # exact at a node


def _synthetic_theory(fn, ds, ns, rhos, rho_max):
    """A theory grid whose g is ``fn(L, u, rho)``, in the page's layout."""
    nodes = []
    for d in ds:
        L = np.log(np.asarray(ns, float) - 1.0)
        nodes.append(
            {
                "d": d,
                "n": list(ns),
                "rho": list(rhos),
                "g0": [fn(x, 1.0 / d, 0.0) for x in L],
                "g": [[fn(x, 1.0 / d, r) for x in L] for r in rhos],
            }
        )
    return {"rho_max": rho_max, "d_nodes": nodes}


def test_interpolant_reproduces_a_tensor_polynomial():
    """g = u (1 + L^2) (1 + rho) vanishes at u = 0 and is a polynomial of the degrees the grid
    carries in every variable: the interpolant must reproduce it (to rounding), so the
    tensor-product and barycentric algebra is right; at n = 2, beta* = 0."""

    def fn(L, u, rho):
        return u * (1.0 + L * L) * (1.0 + rho)

    theory = _synthetic_theory(fn, [3, 9, 50], [3, 40, 5000], [0.0, 0.4, 0.9], 0.9)
    for n, d, rho in [(7, 5, 0.3), (123456, 200, 0.0), (3, 3, 0.9), (10**7, 4096, 0.55)]:
        g = fn(math.log(n - 1.0), 1.0 / d, rho)
        expect = math.exp(g) * math.log(n - 1.0) / (1.0 - rho)
        assert grid.interpolate_beta_star(theory, n, d, rho) == pytest.approx(expect, rel=1e-12)
    assert grid.interpolate_beta_star(theory, 2, 64, 0.5) == 0.0
    with pytest.raises(ValueError, match="rho must lie in"):
        grid.interpolate_beta_star(theory, 100, 64, 0.95)


def test_theory_nodes_are_critical_beta():
    """The rule's nodes are ``critical_beta``'s roots (found from an extrapolated guess, the same
    root to its tolerance 1e-6), with the rho = 0 slice on the closed-form route and the
    surface's first node at RHO_EPS."""
    from attnscale.layer import finite_d

    table = grid.theory_nodes(d=26, rho_degree=1, rho_max=0.9, n_degree=3)
    assert sorted(set(table["slice"])) == ["rho0", "surface"] and len(table) == 3 * 4
    assert set(table[table["slice"] == "surface"]["rho_eval"]) == {grid.RHO_EPS, 0.9}
    for row in table.itertuples():
        exact = finite_d.critical_beta(row.n, row.d, row.rho_eval)
        assert row.beta_star == pytest.approx(exact, rel=3e-6), row
        assert row.g == pytest.approx(
            math.log(exact * (1 - row.rho_eval) / math.log(row.n - 1)), abs=3e-6
        )


def test_node_choices():
    cfg = _config()
    assert cfg["d"] == grid.chebyshev_d_nodes(18), "config.yaml's explorer.d: the degree-18 nodes"
    for k in (3, 12, 24):
        ns = grid.chebyshev_n_nodes(k)
        assert ns[0] == 3 and ns[-1] == grid.N_MAX and ns == sorted(set(ns))
    r = grid.rho_nodes(6, 0.9)
    assert r[0] == 0.0 and r[-1] == 0.9 and len(r) == 7
    assert grid.chebyshev_d_nodes(18)[0] == 3 and max(grid.chebyshev_d_nodes(40)) <= grid.D_MAX


# --------------------------------------------------------------------------- the published data

#: Points that are neither nodes nor the pipeline's held-out points: typical heads, and the
#: edges (d = 3, d = 4096, n = 3, n near 1e7, rho = 0 and rho_max).
CHECK_POINTS = [
    (3, 6, 0.88),
    (4096, 9_999_999, 0.9),
    (7, 2_500_000, 0.0),
    (64, 32768, 0.0),
    (128, 131072, 0.5),
    (700, 20, 0.37),
]


def test_published_grid_against_the_theory():
    """The published grid, interpolated, is within the stated bound of the exact theory."""
    from attnscale.layer import finite_d

    doc = _published()
    for d, n, rho in CHECK_POINTS:
        exact = finite_d.critical_beta(n, d, rho)
        est = grid.interpolate_beta_star(doc["theory"], n, d, rho)
        assert abs(est / exact - 1.0) <= xdata.ERROR_BOUND, (d, n, rho, est, exact)


def test_published_data_come_from_a_default_run():
    doc = _published()
    xdata.check_data(doc)  # layout, and the held-out error within the bound
    src = doc["source"]
    assert src["git_commit"] and not {"test", "unknown"} & {src["git_commit"]}, src
    assert doc["accuracy"]["points"], "no held-out point"
    cfg = _config()
    theory = doc["theory"]
    assert [node["d"] for node in theory["d_nodes"]] == cfg["d"]
    assert theory["rho_max"] == cfg["rho_max"]
    for node in theory["d_nodes"]:
        tier = next(k for k, t in enumerate(cfg["tier_d"]) if node["d"] <= t)
        assert node["n"] == grid.chebyshev_n_nodes(cfg["n_degree"][tier]), node["d"]
        assert node["rho"] == grid.rho_nodes(cfg["rho_degree"][tier], cfg["rho_max"]), node["d"]
    assert doc["rules"] == xdata.rules_table(), "the scaling rules changed: republish"
    assert len(doc["accuracy"]["points"]) == cfg["heldout"] + len(grid.EDGE_POINTS)
    panels = {(p["d"], p["n"]) for p in doc["lambda"]}
    assert {(512, 1024), (32, 1024), (2, 1024)} <= panels, panels


def test_power_law_table_against_the_library():
    from attnscale.layer import finite_d

    table = _published()["power_law"]
    for d in (33, 100, 1000, 4000, 4096, 3):
        for n in (100, 10**6):
            exact = float(finite_d.power_law_beta(n, d))
            assert grid.interpolate_power_law(table, n, d) == pytest.approx(exact, rel=1e-4), d


def test_publish_checks_what_it_copies(tmp_path):
    doc = _published()
    (tmp_path / "results" / "explorer").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    shutil.copyfile(REPO / "config.yaml", tmp_path / "config.yaml")  # publish reads its nodes
    src = tmp_path / "results" / "explorer" / "data.json"
    src.write_text(json.dumps(doc))
    out = xdata.publish(tmp_path / "results", tmp_path / "docs")
    assert json.loads(out.read_text()) == doc
    theory = dict(doc["theory"], d_nodes=doc["theory"]["d_nodes"][:-1])  # not config.yaml's nodes
    smoke = dict(doc, theory=theory)
    src.write_text(json.dumps(smoke))
    with pytest.raises(SystemExit, match="default run"):
        xdata.publish(tmp_path / "results", tmp_path / "docs")
    rough = dict(doc, accuracy=dict(doc["accuracy"], max_abs_rel_error=0.01))
    src.write_text(json.dumps(rough))
    with pytest.raises(ValueError, match="exceeds the bound"):
        xdata.publish(tmp_path / "results", tmp_path / "docs")


def test_lambda_panels():
    rows = [
        {
            "d": d,
            "n": 64,
            "alpha": a,
            "rho": r,
            "gamma": g,
            "lambda_mean": r + g + a,
            "lambda_se": 0.01,
            "trials": 2,
            "git_commit": "abc",
        }
        for d in (16, 2)
        for a in (0.0, 0.5)
        for r in (0.2, 0.5)
        for g in (1.0, 2.0, 4.0)
    ]
    long = pd.DataFrame(
        [
            {"d": 128, "n": 32768, "rho": r, "gamma": g, "lambda": r * g}
            for r in (0.1, 0.9)
            for g in (1.0, 3.0)
        ]
        + [{"d": 64, "n": 32768, "rho": 0.5, "gamma": g, "lambda": g} for g in (1.0, 3.0)]
    )
    panels = xdata.lambda_panels([pd.DataFrame(rows), long], ["a.csv", "b.csv"])
    assert [(p["source"], p["d"], p["n"]) for p in panels] == [
        ("a.csv", 16, 64),
        ("a.csv", 2, 64),
        ("b.csv", 128, 32768),
    ]  # one rho at d = 64: none
    first = panels[0]
    assert first["rho"] == [0.2, 0.5] and first["gamma"] == [1.0, 2.0, 4.0]
    assert first["lambda"][1][2] == pytest.approx(0.5 + 4.0)  # alpha = 0 rows only
    assert first["trials"] == 2 and first["git_commit"] == ["abc"]
    assert panels[2]["lambda"] == [[0.1, 0.3], [0.9, 2.7]] and panels[2]["lambda_se"] is None
    with pytest.raises(ValueError, match="lambda_mean"):
        xdata.lambda_panels([long.drop(columns="lambda")], ["c.csv"])


def test_smoke_run_data_have_the_published_layout(smoke_run):
    doc = json.loads((smoke_run["dir"] / "results" / "explorer" / "data.json").read_text())
    xdata.check_data(doc, bound=False)
    pub = _published()
    assert set(doc) == set(pub) and doc["format"] == pub["format"]
    assert set(doc["theory"]) == set(pub["theory"])
    assert [node["d"] for node in doc["theory"]["d_nodes"]] != _config()["d"]
    assert {p["d"] for p in doc["lambda"]} == {16, 2}


# --------------------------------------------------------------------------- in a real browser

#: Heads whose d is not a d-node (d = 64 and 128 lie between 45 and 99 / 99 and 395).
HEADS = [(128, 131072, 0.5), (64, 32768, 0.0), (96, 1_000_000, 0.3)]

#: Opens the explorer in two same-origin iframes (desktop and phone width) with a hook that
#: records errors and console errors before any of the page's scripts runs, sets the controls,
#: and writes what it saw into its own DOM for --dump-dom.
PROBE = """<!DOCTYPE html><html><body><script>
var HEADS = __HEADS__, CHECKS = __CHECKS__;
var HOOK = "<script>window.__errors=[];" +
  "window.addEventListener('error',function(e){__errors.push('error: '+(e.message||e.type))},true);" +
  "window.addEventListener('unhandledrejection',function(e){__errors.push('rejection: '+e.reason)});" +
  "['error','warn'].forEach(function(k){var f=console[k];console[k]=function(){" +
  "__errors.push(k+': '+Array.prototype.join.call(arguments,' '));f.apply(console,arguments)}});" +
  "<\\/script>";
function wait(cond, ms) {
  return new Promise(function (resolve) {
    var t0 = Date.now();
    (function poll() { if (cond() || Date.now() - t0 > ms) resolve(); else setTimeout(poll, 50); })();
  });
}
function open(html, width, height) {
  var f = document.createElement("iframe");
  f.style.width = width + "px"; f.style.height = height + "px"; f.style.border = "0";
  document.body.appendChild(f);
  var doc = f.contentDocument;
  doc.open(); doc.write(html.replace(/<head[^>]*>/i, function (m) { return m + HOOK; })); doc.close();
  var w = f.contentWindow;
  return wait(function () {
    var root = w.document.getElementById("attnscale-explorer");
    return root && root.getAttribute("data-ready") && w.document.readyState === "complete";
  }, 20000).then(function () {
    var mj = w.MathJax, ready = (mj && mj.startup && mj.startup.promise) || Promise.resolve();
    return ready.then(function () { return f; });
  });
}
function setControl(w, id, value) {
  var el = w.document.getElementById(id);
  el.value = value;
  el.dispatchEvent(new w.Event("change", {bubbles: true}));
}
function read(w) {
  var d = w.document, rules = {};
  Array.from(d.querySelectorAll("tr[data-rule]")).forEach(function (tr) {
    var td = tr.querySelectorAll("td");
    rules[tr.getAttribute("data-rule")] = [td[1].textContent, td[2].textContent, td[3].textContent,
                                           td[4].textContent];
  });
  var out = d.getElementById("ax-out-beta_star");
  return {beta: +out.getAttribute("data-value"), beta_text: out.textContent, rules: rules,
          hash: w.location.hash};
}
function overflow(f) {
  var e = f.contentDocument.documentElement;
  return {scroll: e.scrollWidth, client: e.clientWidth};
}
// Issue 45: a decimal comma, a message that follows what is typed, one number format, rule rows
// chosen by keyboard, the rule menu wide enough for its entries (this frame is 1400 px wide).
function issue45(w, d, ex) {
  var out = {};
  function typeIn(id, value) {
    var el = d.getElementById(id);
    el.value = value;
    el.dispatchEvent(new w.Event("input", {bubbles: true}));
    return {state: ex.state[id.slice(3)], msg: d.getElementById(id + "-msg").textContent};
  }
  setControl(w, "ax-rho", "0,3");
  out.comma = {state: ex.state.rho, msg: d.getElementById("ax-rho-msg").textContent,
               box: d.getElementById("ax-rho").value};
  out.typing = [typeIn("ax-rho", "0.95"), typeIn("ax-rho", "0.9x"), typeIn("ax-rho", "0.4")];
  out.texts = [[3, 10000000, 0], [4, 1000000, 0.5], [9, 20000, 0.2], [128, 131072, 0.5]].map(function (hd) {
    setControl(w, "ax-d", hd[0]); setControl(w, "ax-n", hd[1]); setControl(w, "ax-rho", hd[2]);
    return d.getElementById("attnscale-explorer").textContent;
  });
  var rows = Array.from(d.querySelectorAll("tr[data-rule]"));
  var other = rows.filter(function (r) { return r.getAttribute("data-rule") !== ex.state.rule; })[1];
  var key = other.getAttribute("data-rule");
  other.focus();
  other.dispatchEvent(new w.KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  var act = d.activeElement;
  out.keyboard = {tabindex: rows.map(function (r) { return r.tabIndex; }), key: key, rule: ex.state.rule,
                  focused: act && act.getAttribute ? act.getAttribute("data-rule") : null,
                  menu: d.getElementById("ax-rule").value};
  var sel = d.getElementById("ax-rule"), box = d.querySelector(".ax-controls").getBoundingClientRect();
  var r = sel.getBoundingClientRect(), cs = w.getComputedStyle(sel), probe = d.createElement("span");
  probe.style.font = cs.font; probe.style.whiteSpace = "nowrap"; probe.style.position = "absolute";
  d.body.appendChild(probe);
  var widest = 0;
  Array.from(sel.options).forEach(function (o) { probe.textContent = o.text; widest = Math.max(widest, probe.getBoundingClientRect().width); });
  probe.remove();
  out.menu = {left: r.left, right: r.right, box_left: box.left, box_right: box.right,
              room: sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight), widest: widest};
  setControl(w, "ax-rule", ex.rules[0].key);
  sel.dispatchEvent(new w.Event("change", {bubbles: true}));
  return out;
}
// Issue 35: what a reader meets who types or addresses a bad value, drags a slider to an end,
// changes the address, or uses a screen reader; in a frame opened at a bad address.
function ux() {
  var f = document.createElement("iframe"), out = {};
  f.style.width = "1400px"; f.style.height = "900px"; f.style.border = "0";
  document.body.appendChild(f);
  f.src = "explorer.html#d=&n=&rho=0.95&rule=no_such_rule";
  return wait(function () {
    var d = f.contentDocument, root = d && d.getElementById("attnscale-explorer");
    return root && root.getAttribute("data-ready") && d.readyState === "complete";
  }, 20000).then(function () {
    var w = f.contentWindow, d = w.document, api = w.attnscaleExplorer, ex = api.explorer;
    function text(id) { return d.getElementById(id).textContent; }
    function seen(id) {
      var s = ex.state;
      return {state: {d: s.d, n: s.n, rho: s.rho, rule: s.rule},
              msg: id ? text(id + "-msg") : null, box: id ? d.getElementById(id).value : null,
              beta: +d.getElementById("ax-out-beta_star").getAttribute("data-value"),
              expect: api.betaStar(s.n, s.d, s.rho), hash: w.location.hash};
    }
    function circles() {  // every marker of every chart, and whether it lies inside its frame
      return Array.from(d.querySelectorAll("svg.ax-chart")).map(function (svg) {
        var fr = svg.querySelector("rect.ax-frame"), x0 = +fr.getAttribute("x"), y0 = +fr.getAttribute("y");
        var x1 = x0 + +fr.getAttribute("width"), y1 = y0 + +fr.getAttribute("height");
        return Array.from(svg.querySelectorAll("circle")).map(function (c) {
          var cx = +c.getAttribute("cx"), cy = +c.getAttribute("cy");
          return cx >= x0 - 0.5 && cx <= x1 + 0.5 && cy >= y0 - 0.5 && cy <= y1 + 0.5;
        });
      });
    }
    out.address = {seen: seen(null), msgs: ["d", "n", "rho"].map(function (k) { return text("ax-" + k + "-msg"); }),
                   rule: text("ax-rule-msg"), boxes: ["d", "n", "rho"].map(function (k) { return d.getElementById("ax-" + k).value; })};
    out.typed = [["ax-d", "99999"], ["ax-rho", "0.95"], ["ax-n", "2e7"], ["ax-d", ""], ["ax-n", "abc"],
                 ["ax-d", "64.4"], ["ax-d", "64"], ["ax-d", "1"]].map(function (c) {
      setControl(w, c[0], c[1]);
      var s = seen(c[0]); s.id = c[0]; s.typed = c[1];
      return s;
    });
    out.ends = ["d", "n", "rho"].map(function (k) {
      var s = d.getElementById("ax-" + k + "-slider"), r = {key: k};
      s.value = s.max; s.dispatchEvent(new w.Event("input", {bubbles: true}));
      r.hi = ex.state[k]; r.hi_text = s.getAttribute("aria-valuetext"); r.hi_box = d.getElementById("ax-" + k).value;
      s.value = s.min; s.dispatchEvent(new w.Event("input", {bubbles: true}));
      r.lo = ex.state[k]; r.lo_text = s.getAttribute("aria-valuetext"); r.lo_box = d.getElementById("ax-" + k).value;
      return r;
    });
    out.markers = [[128, 131072, 0.5], [3, 10000000, 0.9], [128, 131072, 0.01]].map(function (hd) {
      setControl(w, "ax-d", hd[0]); setControl(w, "ax-n", hd[1]); setControl(w, "ax-rho", hd[2]);
      return {head: hd, circles: circles(), where: text("ax-heat-where"), note: d.querySelector("#ax-heat-where + p").textContent};
    });
    out.issue45 = issue45(w, d, ex);
    var verdict = d.getElementById("ax-verdict"), before = verdict.textContent;
    w.location.hash = "#d=64&n=1000&rho=0.3&rule=ssmax";
    return wait(function () { return ex.state.d === 64; }, 5000).then(function () {
      out.hashchange = seen("ax-d");
      out.hashchange.verdict_changed = verdict.textContent !== before;
      out.hashchange.slider_text = d.getElementById("ax-d-slider").getAttribute("aria-valuetext");
      out.hashchange.rule = d.getElementById("ax-rule").value;
      out.aria = {live: verdict.getAttribute("aria-live"),
                  labels: ["ax-d", "ax-d-slider", "ax-n", "ax-n-slider", "ax-rho", "ax-rho-slider", "ax-rule"].map(function (id) {
                    var e = d.getElementById(id), ls = Array.from(e.labels || []);
                    return [id, ls.length > 0 && ls.every(function (l) {
                      var r = l.getBoundingClientRect();
                      return r.width > 0 && r.height > 0 && l.textContent.trim().length > 0;
                    }), ls.map(function (l) { return l.textContent.trim(); }).join(" | ")];
                  }),
                  valuetext: ["d", "n", "rho"].map(function (k) { return d.getElementById("ax-" + k + "-slider").getAttribute("aria-valuetext"); })};
      var link = Array.from(d.querySelectorAll("#attnscale-explorer code")).filter(function (c) {
        return c.textContent.indexOf("attnscale estimate-rho") === 0; });
      out.estimate_rho = link.map(function (c) { return c.parentElement.textContent; });
      return out;
    });
  });
}
fetch("explorer.html").then(function (r) { return r.text(); }).then(function (html) {
  return open(html, 1280, 900).then(function (desk) {
    return open(html, 390, 844).then(function (phone) { return [desk, phone]; });
  });
}).then(function (frames) {
  var w = frames[0].contentWindow, api = w.attnscaleExplorer, result = {heads: []};
  result.first = {rho: api.explorer.state.rho, where: w.document.getElementById("ax-heat-where").textContent,
                  circles: w.document.querySelectorAll("svg.ax-chart")[2].querySelectorAll("circle").length};
  HEADS.forEach(function (hd) {
    setControl(w, "ax-d", hd[0]); setControl(w, "ax-n", hd[1]); setControl(w, "ax-rho", hd[2]);
    result.heads.push(read(w));
  });
  setControl(frames[1].contentWindow, "ax-d", 64);
  result.beta = CHECKS.beta.map(function (p) { return api.betaStar(p[0], p[1], p[2]); });
  result.power = CHECKS.power.map(function (p) { return api.powerLaw(p[0], p[1]); });
  result.m = CHECKS.rules.map(function (p) { return api.ruleM(p[0], p[1]); });
  result.gamma_eff = CHECKS.rules.map(function (p) { return api.gammaEff(p[0], p[1], p[2]); });
  result.known = CHECKS.keys.map(function (k) { return api.hasRule(k); });
  result.errors = frames.map(function (f) { return f.contentWindow.__errors; });
  result.overflow = frames.map(overflow);
  result.svg = frames.map(function (f) {
    var d = f.contentDocument;
    return {charts: d.querySelectorAll("svg.ax-chart").length,
            paths: d.querySelectorAll("svg.ax-chart path").length,
            cells: d.querySelectorAll("svg.ax-chart rect[fill]").length};
  });
  return ux().then(function (got) { result.ux = got; return result; });
}).catch(function (e) { return {failed: String(e && e.stack || e)}; }).then(function (result) {
  var pre = document.createElement("pre");
  pre.id = "attnscale-probe";
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
});
</script></body></html>"""


def _checks(doc: dict) -> dict:
    rng = np.random.default_rng(29)
    beta = [
        (int(n), int(d), float(f"{r:.4f}"))
        for n, d, r in zip(
            np.rint(np.exp(rng.uniform(np.log(3), np.log(1e7), 12))),
            np.rint(np.exp(rng.uniform(np.log(3), np.log(4096), 12))),
            np.r_[0.0, rng.uniform(0, doc["theory"]["rho_max"], 11)],
            strict=True,
        )
    ]
    keys = [r["key"] for r in doc["rules"]]
    ns = [2, 3, 1000, 4096, 8191, 8192, 8193, 16384, 16385, 32768, 131072, 10**7]
    rules = [(k, n, rho) for k in keys for n in ns for rho in (0.0, 0.5)]
    power = [(n, d) for n in (3, 1000, 10**7) for d in (3, 4, 33, 128, 4096)]
    return {"beta": beta, "power": power, "rules": rules, "keys": keys}


def _boundary_free(ratio: float, rel: float) -> bool:
    """True if every value within ``rel`` (relative) of ``ratio`` rounds to the same 3 decimals."""
    lo, hi = ratio * (1 - rel), ratio * (1 + rel)
    return f"{lo:.3f}" == f"{hi:.3f}"


@pytest.fixture(scope="module")
def probed(request, site, served, tmp_path_factory) -> dict:  # noqa: F811
    exe = require_program(request.config, "Chromium")
    assert site["proc"].returncode == 0, "the site did not build"
    doc = _published()
    checks = _checks(doc)
    probe = PROBE.replace("__HEADS__", json.dumps(HEADS)).replace("__CHECKS__", json.dumps(checks))
    (site["html"] / "_probe_explorer.html").write_text(probe, encoding="utf-8")
    profile = tmp_path_factory.mktemp("chromium-explorer")
    result = browser_probe(exe, f"{served}/_probe_explorer.html", profile, 60000)
    assert "failed" not in result, result.get("failed")
    return {"result": result, "doc": doc, "checks": checks}


def test_the_page_loads_without_errors_and_draws(probed):
    result = probed["result"]
    assert result["errors"] == [[], []], result["errors"]
    for seen in result["svg"]:  # beta, gamma and the heat map, with their curves and cells
        assert seen["charts"] == 3 and seen["paths"] >= 8 and seen["cells"] >= 1000, seen


def test_phone_width_has_no_sideways_overflow(probed):
    desk, phone = probed["result"]["overflow"]
    assert phone["client"] <= 390 and phone["scroll"] <= phone["client"], phone
    assert desk["scroll"] <= desk["client"], desk


def test_the_page_shows_the_calculators_numbers(probed):
    """Three heads set through the controls: the page's beta* is the calculator's within the
    bound, and every rule's m(n), gamma_eff, ratio and side read as ``attnscale critical``
    prints them."""
    from attnscale import cli

    for (d, n, rho), seen in zip(HEADS, probed["result"]["heads"], strict=True):
        assert seen["hash"].startswith(f"#d={d}&n={n}&rho={rho:g}&"), seen["hash"]
        report = cli.critical_report(n, d, rho)
        beta = report["beta_star"]
        assert abs(seen["beta"] / beta - 1.0) <= xdata.ERROR_BOUND, (d, n, rho, seen["beta"], beta)
        assert float(seen["beta_text"]) == pytest.approx(seen["beta"], rel=6e-5)  # 5 digits
        # the page's ratio differs from the calculator's only through beta* (gamma_eff is exact),
        # so its three decimals are the calculator's unless a rounding boundary lies that close
        rel = abs(seen["beta"] / beta - 1.0) + 1e-12
        for rule in report["scaling_rules"]:
            m_text, g_text, ratio_text, side = seen["rules"][rule["key"]]
            assert m_text == cli._num(rule["m"]) and g_text == cli._num(rule["gamma_eff"])
            ratio = rule["gamma_eff_over_gamma_star"]
            if _boundary_free(ratio, rel):
                assert ratio_text == cli._num(ratio, 3), (rule["key"], d, n, rho)
                assert side == rule["side"], (rule["key"], d, n, rho)
            else:  # the next 3-decimal value at most
                assert abs(float(ratio_text) - ratio) <= 5e-4 + rel * ratio, (rule["key"], d, n)


def test_the_script_is_the_python_twin(probed):
    """docs/_static/explorer.js against attnscale.experiments.explorer.grid and
    attnscale.layer.scores.scaling_rules at many points: the same interpolant, power law and rules."""
    from attnscale.layer.scores import scaling_rules

    result, doc, checks = probed["result"], probed["doc"], probed["checks"]
    for (n, d, rho), js in zip(checks["beta"], result["beta"], strict=True):
        assert js == pytest.approx(grid.interpolate_beta_star(doc["theory"], n, d, rho), rel=1e-9)
    for (n, d), js in zip(checks["power"], result["power"], strict=True):
        assert js == pytest.approx(grid.interpolate_power_law(doc["power_law"], n, d), rel=1e-9)
    assert all(result["known"]), dict(zip(checks["keys"], result["known"], strict=True))
    for (key, n, rho), m, g in zip(checks["rules"], result["m"], result["gamma_eff"], strict=True):
        rule = scaling_rules.rule_by_key(key)
        m_py = float(np.asarray(rule.m(float(n))))
        assert m == pytest.approx(m_py, rel=1e-12), (key, n)
        if rule.calibration == "absolute":
            g_py = m_py / math.log(n)
        else:
            gc = 1.0 if rho == 0 else 1.0 / (1.0 - rho)
            g_py = gc * float(scaling_rules.gamma_ratio(rule, float(n)))
        assert g == pytest.approx(g_py, rel=1e-12), (key, n, rho)


# --------------------------------------------------------------------------- what a reader meets
# (issue 35: the page opened at a bad address, then typed into, dragged, re-addressed)


def _theory_range(doc: dict) -> dict:
    th = doc["theory"]
    return {"d": (th["d_min"], th["d_max"]), "n": (2, th["n_max"]), "rho": (0.0, th["rho_max"])}


def test_a_bad_address_says_what_it_uses(probed):
    """``#d=&n=&rho=0.95&rule=no_such_rule``: empty is not zero (d and n keep the page's head),
    rho outside the grid uses its end, an unknown rule the first; a message next to each control
    says so, and the numbers are those of the values used."""
    got = probed["result"]["ux"]["address"]
    rho_max = probed["doc"]["theory"]["rho_max"]
    assert got["seen"]["state"]["d"] == 128 and got["seen"]["state"]["n"] == 131072, got
    assert got["seen"]["state"]["rho"] == rho_max, got
    msg_d, msg_n, msg_rho = got["msgs"]
    assert "empty" in msg_d and "d = 128" in msg_d, msg_d
    assert "empty" in msg_n and "n = 131072" in msg_n, msg_n
    assert "0.95" in msg_rho and f"= {rho_max:g}" in msg_rho and "outside" in msg_rho, msg_rho
    assert "no_such_rule" in got["rule"], got["rule"]
    assert got["boxes"] == ["128", "131072", f"{rho_max:g}"], got["boxes"]
    assert got["seen"]["beta"] == pytest.approx(got["seen"]["expect"], rel=1e-12)


def test_a_typed_value_outside_the_range_or_empty_is_never_silent(probed):
    """A typed value outside the range uses the nearest end and says so; an empty or non-numeric
    box keeps the current value (not the minimum) and says so; a fraction of an integer input is
    rounded and says so; a valid value clears the message. The box shows the value used and the
    page's beta* is that value's."""
    rng = _theory_range(probed["doc"])
    steps = {(s["id"], s["typed"]): s for s in probed["result"]["ux"]["typed"]}
    for s in steps.values():
        assert s["beta"] == pytest.approx(s["expect"], rel=1e-12), s
        key = s["id"].removeprefix("ax-")
        assert float(s["box"]) == pytest.approx(s["state"][key]), s
    big_d = steps[("ax-d", "99999")]
    assert (
        big_d["state"]["d"] == rng["d"][1] and "99999" in big_d["msg"] and "outside" in big_d["msg"]
    )
    big_rho = steps[("ax-rho", "0.95")]
    assert big_rho["state"]["rho"] == rng["rho"][1] and "0.95" in big_rho["msg"]
    big_n = steps[("ax-n", "2e7")]
    assert big_n["state"]["n"] == rng["n"][1] and "2e7" in big_n["msg"]
    empty = steps[("ax-d", "")]
    assert empty["state"]["d"] == rng["d"][1], (
        "an empty box must keep the current d, not the minimum"
    )
    assert "empty" in empty["msg"], empty
    text = steps[("ax-n", "abc")]  # a number box holds no text: the browser empties it
    assert text["state"]["n"] == rng["n"][1] and text["msg"], text
    frac = steps[("ax-d", "64.4")]
    assert frac["state"]["d"] == 64 and "whole number" in frac["msg"], frac
    ok = steps[("ax-d", "64")]
    assert ok["state"]["d"] == 64 and ok["msg"] == "", ok
    small = steps[("ax-d", "1")]
    assert small["state"]["d"] == rng["d"][0] and "outside" in small["msg"], small


def test_sliders_reach_both_ends_exactly(probed):
    rng = _theory_range(probed["doc"])
    for end in probed["result"]["ux"]["ends"]:
        lo, hi = rng[end["key"]]
        assert (end["lo"], end["hi"]) == (lo, hi), end
        assert float(end["lo_box"]) == lo and float(end["hi_box"]) == hi, end
        assert float(end["hi_text"].split("= ")[1]) == hi, end  # the value, not the position
        assert float(end["lo_text"].split("= ")[1]) == lo, end


def test_markers_outside_the_panel_are_not_drawn(probed):
    """Every marker of every chart lies inside its frame; where the head's gamma* or the rule's
    gamma_eff is off the heat map (d = 3, n = 1e7, rho = 0.9: gamma* far above it; rho = 0.01:
    left of the panel's first rho), the note says where it is instead."""
    inside, far, left = probed["result"]["ux"]["markers"]
    for case in (inside, far, left):
        assert all(all(c) for c in case["circles"]), case
    assert inside["where"] == "" and len(inside["circles"][2]) == 2, inside
    assert far["where"].startswith("Not drawn on the panel:"), far
    assert "above the panel's \u03b3 range" in far["where"], far
    assert len(far["circles"][2]) < 2, far
    assert "below the panel's \u03c1 range" in left["where"] and "0.01" in left["where"], left


def test_a_new_address_updates_the_open_page(probed):
    got = probed["result"]["ux"]["hashchange"]
    assert got["state"] == {"d": 64, "n": 1000, "rho": 0.3, "rule": "ssmax"}, got
    assert got["box"] == "64" and got["msg"] == "" and got["rule"] == "ssmax", got
    assert got["slider_text"] == "d = 64" and got["verdict_changed"], got
    assert got["beta"] == pytest.approx(got["expect"], rel=1e-12)


def test_screen_readers_hear_values_labels_and_the_verdict(probed):
    aria = probed["result"]["ux"]["aria"]
    assert aria["live"] == "polite", aria
    bad = [(i, names) for i, ok, names in aria["labels"] if not ok]
    assert not bad, f"controls without a visible label of their own: {bad}"
    assert aria["valuetext"] == ["d = 64", "n = 1000", "\u03c1 = 0.3"], aria["valuetext"]


def test_the_page_says_how_to_estimate_rho(probed):
    notes = probed["result"]["ux"]["estimate_rho"]
    assert notes and "estimate-rho" in notes[0] and "keys" in notes[0], notes


# --------------------------------------------------------------------------- issue 45


def test_the_page_opens_inside_the_simulated_range(probed):
    """No address: the head's rho lies in the simulated tables' range (0.05 .. 0.9), so the
    first view draws both markers on the phase diagram and warns of nothing."""
    first = probed["result"]["first"]
    assert 0.05 <= first["rho"] <= 0.9 and first["where"] == "", first
    assert first["circles"] == 2, first


def test_a_decimal_comma_is_a_decimal_point(probed):
    comma = probed["result"]["ux"]["issue45"]["comma"]
    assert comma["state"] == 0.3 and comma["msg"] == "" and comma["box"] == "0.3", comma


def test_the_message_follows_what_the_box_holds(probed):
    """Typing (no Enter yet): an out-of-range value, then a non-number, each gets its own
    message at once; a valid one clears it and is used."""
    over, junk, ok = probed["result"]["ux"]["issue45"]["typing"]
    assert "0.95" in over["msg"] and "outside" in over["msg"], over
    assert "0.9x" in junk["msg"] and "not a number" in junk["msg"], junk
    assert ok == {"state": 0.4, "msg": ""}, ok


def test_one_number_format(probed):
    """Numbers below 1e5 are written out, larger ones as Python's exponent form (1.2977e+05):
    never JavaScript's ``1.101e+4``."""
    for text in probed["result"]["ux"]["issue45"]["texts"]:
        bad = re.findall(r"\d(?:\.\d+)?e[+-]\d(?!\d)", text)
        assert not bad, bad


def test_rule_rows_work_by_keyboard(probed):
    kb = probed["result"]["ux"]["issue45"]["keyboard"]
    assert kb["tabindex"] and set(kb["tabindex"]) == {0}, kb
    assert kb["rule"] == kb["key"] == kb["menu"] == kb["focused"], kb


def test_the_rule_menu_fits_its_box_at_1400_px(probed):
    menu = probed["result"]["ux"]["issue45"]["menu"]
    assert menu["box_left"] <= menu["left"] and menu["right"] <= menu["box_right"], menu
    assert menu["widest"] <= menu["room"] - 20, menu  # the longest entry beside the arrow
