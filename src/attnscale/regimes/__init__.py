"""What sets the order of the critical scale: score models, their samplers and the observable
(issue 20, docs/regimes.md).

One query row of softmax attention, ``A_j = e^{beta c_j} / sum_l e^{beta c_l}``, and one
observable for every score model: the mean weight of the *top group*
(docs/regimes.md#the-observable). Its critical scale ``beta*(n)`` is where that mean crosses
``level`` (1/2 unless stated). One module per concern, each imported on its own (this package
imports none of them, so a rule depends only on the modules it uses):

:mod:`attnscale.regimes.gap`
    self-score 1 against ``n - 1`` scores ``rho`` (Paper A's simplex, order ``log n``), and Paper
    A's Gaussian tokens at finite ``d``, where that ``log n`` scale ends
:mod:`attnscale.regimes.ties`
    ``k`` near-ties: exact and noisy copies of the query (first-order group formula), and the
    practical reading
:mod:`attnscale.regimes.ties_exact`
    the exact finite-``d`` theory of ``k`` copies of the query among Paper A's Gaussian tokens
:mod:`attnscale.regimes.rem`
    ``n`` i.i.d. Gaussian scores, no self-score (random-energy model): the exact finite-``n`` law,
    its Poisson-Dirichlet limit and the freezing point
:mod:`attnscale.regimes.rem_samplers`
    random rows of the REM, all scores or only those above a threshold
:mod:`attnscale.regimes.token_samplers`
    one random query row of Gaussian near-simplex tokens, with copies of the query
:mod:`attnscale.regimes.observable`
    the top-group weight of one row and its beta-derivative
:mod:`attnscale.regimes.common`
    the level, and the argument checks the models share

Imports :mod:`attnscale.core` and :mod:`attnscale.layer` (the finite-d theory), nothing above
(docs/pipeline.md#the-package-layout).
"""

__all__: list[str] = []
