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
"""

from __future__ import annotations

import re

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
    assert pngs and len(checked) >= len(pngs), (len(checked), len(pngs))
    assert not collisions, "text that collides in the smoke run's figures:\n" + "\n".join(
        collisions
    )
