"""Everything the transformer family uses from :mod:`attnscale.core` and :mod:`attnscale.layer`,
imported in this one module so that a move of those names (the ``attnscale.layer``
reorganisation) is fixed here only. The rest of :mod:`attnscale.transformer` and the family's
entries in :mod:`attnscale.experiments` import these names from here (the entries take
``provenance_columns`` from :mod:`attnscale.pipeline.io`, a level this package may not import).
"""

from attnscale.core.crossings import crossing_x, first_crossing
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.softmax import softmax_rows
from attnscale.layer.observables import critical_level
from attnscale.layer.scores.attention import angle_ratio_outputs, score_spread
from attnscale.layer.scores.learned import effective_scores, gamma_c_eff, gamma_c_fluct
from attnscale.layer.theory import simplex_lambda
from attnscale.layer.tokens import mean_cosine

__all__ = [
    "job_rng",
    "spawn_key",
    "effective_scores",
    "gamma_c_eff",
    "gamma_c_fluct",
    "angle_ratio_outputs",
    "first_crossing",
    "crossing_x",
    "critical_level",
    "softmax_rows",
    "score_spread",
    "simplex_lambda",
    "mean_cosine",
]
