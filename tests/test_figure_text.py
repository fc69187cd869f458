"""No text collides in any figure (issue 35; docs/pipeline.md#figures-text-never-collides).

* The check (:func:`attnscale.figures.style.text_collisions`, on the renderer's extents) finds a
  caption that covers the x labels, a title that leaves the canvas and two overlapping tick
  labels, and passes a figure whose text is apart.
* :func:`attnscale.figures.style.fit_caption` makes room for a caption of any length: the figure
  grows at the bottom, the axes keep their size in inches, and nothing collides.
* Paper A's Figure 2, drawn from the smoke run's table with captions as long as the long-context
  configuration's (its notes make the caption grow), has no collision.
* Every figure of the smoke run was checked when it was saved (the figure jobs' logs say so) and
  none has a collision.
* Legends against data (issue 45): :func:`attnscale.figures.style.legend_collisions` finds a
  legend on a curve, on a segment that crosses it without a vertex inside, on an error bar and a
  figure legend on an axes' data, and passes a legend beside the data; the save hook moves a
  legend on data to a free place (:func:`attnscale.figures.style.place_legends`), making room
  above the data if there is none, and logs one that still covers data.
* Captions (issue 45): :func:`attnscale.figures.style.caption_problems` finds raw TeX outside
  ``$...$``, an unpaired ``$`` and mathtext that does not render (a formula split by the
  wrapping), and passes plain text, an escaped dollar and mathtext that renders.
* One rule can save a figure and its parts (the sharpness rows): the adapter writes each figure
  returned under a figure output's name to that output.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnscale.figures import style  # noqa: E402

WORDS = (
    "Colour: eta over the draw's super-critical limit (Theorem 2.4 at the realised norms); "
    "lambda and eta from 128 sampled query rows per draw (unbiased; the SE over draws includes "
    "the row sampling); common component z_0 of norm 1 (conditioned on ||z_0||) [choice; "
    "docs/long-context.md]."
)


def _three_panels(bottom: float = 0.2):
    style.apply_style()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax in axes:
        ax.plot([1, 2, 3])
        ax.set_xlabel("x label")
        ax.set_title("panel")
    fig.suptitle("A figure")
    fig.subplots_adjust(bottom=bottom, top=0.8)
    return fig, axes


def test_the_check_finds_what_collides():
    fig, axes = _three_panels()
    assert style.text_collisions(fig) == []
    fig.text(0.01, 0.005, "\n".join([WORDS[:150]] * 6), fontsize=6.5, va="bottom")  # no room
    found = style.text_collisions(fig)
    assert any("xlabel 'x label'" in f and "overlaps" in f for f in found), found
    assert any("x tick" in f for f in found), found
    fig.suptitle("A figure", y=1.05)  # leaves the canvas at the top
    assert any("leaves the canvas" in f and "A figure" in f for f in style.text_collisions(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xticks([0, 0.01])
    ax.set_xticklabels(["a long label", "another one"])
    assert any("x tick" in f and "overlaps" in f for f in style.text_collisions(fig))
    plt.close(fig)


@pytest.mark.parametrize("repeats", [1, 4, 12])
def test_a_caption_gets_room_and_the_axes_keep_their_size(tmp_path, repeats):
    fig, axes = _three_panels()
    size = [ax.get_window_extent().size.copy() for ax in axes]
    height = fig.get_figheight()
    style.add_caption(fig, " ".join([WORDS] * repeats))
    fig.savefig(tmp_path / "f.png")  # add_caption's hook fits the caption before saving
    assert style.text_collisions(fig) == []
    assert fig.get_figheight() > height
    for ax, s in zip(axes, size, strict=True):
        assert ax.get_window_extent().size == pytest.approx(s, abs=0.5)
    plt.close(fig)


@pytest.mark.workflow
@pytest.mark.parametrize("repeats", [1, 2])
def test_figure2_with_long_context_captions(smoke_run, tmp_path, repeats):
    """Paper A's Figure 2 (``plot_figure2``) from the smoke run's table, its caption as long as
    the long-context run's (the rule's text and the notes of config/long-context.yaml) and longer:
    the caption never covers the x labels."""
    from attnscale.figures.paper_a_eta import plot_figure2

    results = smoke_run["dir"] / "results" / "paper_a"
    data = pd.read_csv(results / "figure2_data.csv")
    line = pd.read_csv(results / "finite_d_line.csv")
    # about 1000 characters, as the long-context run's caption (docs/_static/long-context/), and 2000
    fig = plot_figure2(data=data, caption=" ".join([WORDS] * (3 * repeats)), line=line)
    fig.savefig(tmp_path / "figure2.png")
    assert style.text_collisions(fig) == []
    plt.close(fig)


@pytest.mark.workflow
def test_no_figure_of_the_smoke_run_has_colliding_text(smoke_run):
    """Every figure job of the smoke run logged the check of its saved figure, with no
    collision (the hook of add_caption; every figure of the pipeline has a caption)."""
    work = smoke_run["dir"]
    pngs = sorted((work / "figures").rglob("*.png"))
    checked, collisions = [], []
    for log in sorted((work / "logs").rglob("*.log")):
        text = log.read_text(encoding="utf-8", errors="replace")
        if "figure text checked" in text:
            checked.append(log)
        collisions += [
            f"{log.relative_to(work)}: {m}" for m in re.findall(r"figure text collides: (.*)", text)
        ]
    checks = sum(log.read_text(errors="replace").count("figure text checked") for log in checked)
    assert pngs and checks >= len(pngs), (checks, len(pngs))
    assert not collisions, "text that collides in the smoke run's figures:\n" + "\n".join(
        collisions
    )


def test_the_check_finds_legends_on_data():
    import numpy as np

    style.apply_style()
    fig, ax = plt.subplots(figsize=(4, 3))
    x = np.linspace(0.0, 1.0, 50)
    ax.plot(x, x, label="rising")
    ax.plot(x, 1 - x, label="falling")
    ax.legend(loc="upper left")  # on the falling line
    found = style.legend_collisions(fig)
    assert len(found) == 1 and "axes 0 legend covers data of axes 0" in found[0], found
    ax.legend(loc="center right")  # beside both lines
    assert style.legend_collisions(fig) == []
    ax.errorbar([0.9], [0.5], yerr=[0.1], fmt="o", label="bar")  # under the legend
    ax.legend(loc="center right")
    assert style.legend_collisions(fig), "an error bar under the legend"
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0.0, 1.0], [0.5, 0.5], label="two vertices, both outside the legend")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert style.legend_collisions(fig), "a segment through the legend"
    ax.get_legend().remove()
    fig.legend(["on the axes"], loc="center")
    assert any("figure legend 0 covers data of axes 0" in f for f in style.legend_collisions(fig))
    plt.close(fig)


def test_a_legend_moves_off_data_when_saved_or_is_logged(tmp_path, caplog):
    """The save hook moves a legend on data to a free place (:func:`place_legends`); where no
    place is free, the log says it covers data."""
    style.apply_style()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0.0, 1.0], [0.5, 0.5], label="line")
    ax.plot([0.0, 1.0], [0.0, 1.0], label="diagonal")
    ax.legend(loc="center")
    assert style.legend_collisions(fig)
    style.add_caption(fig, "A caption.")
    with caplog.at_level("INFO", logger="attnscale"):
        fig.savefig(tmp_path / "f.png")
    assert "figure text checked: 0 collisions" in caplog.text
    assert style.legend_collisions(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    for y in [0.02 * k for k in range(51)]:  # no free place: room is made above the data
        ax.plot([0.0, 1.0], [y, y], lw=0.3, color="0.5")
    ax.plot([], [], label="line")
    ax.legend(loc="center")
    top = ax.get_ylim()[1]
    assert style.place_legends(fig) == 1
    assert ax.get_ylim()[1] > top and style.legend_collisions(fig) == []
    plt.close(fig)
    caplog.clear()
    fig, ax = plt.subplots(figsize=(4, 3))
    for x in [0.02 * k for k in range(51)]:  # lines across the whole height: no room anywhere
        ax.axvline(x, lw=0.3, color="0.5")
    ax.plot([], [], label="line")
    ax.legend(loc="center")
    style.add_caption(fig, "A caption.")
    with caplog.at_level("INFO", logger="attnscale"):
        fig.savefig(tmp_path / "g.png")
    assert "figure text collides: axes 0 legend covers data" in caplog.text
    plt.close(fig)


@pytest.mark.parametrize(
    "text, problem",
    [
        (r"x = \gamma / \gamma_c", r"raw TeX '\\gamma'"),
        (r"the limit $n \to \infty", "unpaired"),
        (r"$\frac{1}{$ and more", "does not render"),
        (r"a $\notacommand$ here", "does not render"),
        ("a formula split\n$x =\n\\gamma$ by the wrapping", "does not render"),
    ],
)
def test_the_check_finds_raw_tex_in_captions(text, problem):
    found = style.caption_problems(text)
    assert any(problem in f for f in found), found


def test_plain_captions_and_mathtext_pass():
    assert style.caption_problems("plain text, 1/(1 + 3 rho_hat), costs \\$5 [choice].") == []
    assert style.caption_problems(r"$x = \gamma / \gamma_c(\hat\rho)$ and $n \to \infty$") == []


def test_one_rule_saves_a_figure_and_its_parts(tmp_path):
    from attnscale.pipeline.adapter import write_outputs

    style.apply_style()
    figs = {k: plt.subplots(figsize=(2, 2))[0] for k in ("png", "row_a", "row_b")}
    for k, f in figs.items():
        f.axes[0].set_title(k)
    out = {k: str(tmp_path / f"{k}.png") for k in figs} | {"pdf": str(tmp_path / "png.pdf")}
    write_outputs(figs, out)
    for k in (*figs, "pdf"):
        assert (tmp_path / Path(out[k]).name).stat().st_size > 0, k


def test_a_moved_legend_avoids_the_axes_texts():
    style.apply_style()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0.0, 1.0], [0.5, 0.5], label="line")
    ax.text(0.02, 0.97, "a note\nof two lines", transform=ax.transAxes, va="top")
    ax.legend(loc="center")
    style.place_legends(fig)
    assert style.legend_collisions(fig) == [] and style.text_collisions(fig) == []
    plt.close(fig)
