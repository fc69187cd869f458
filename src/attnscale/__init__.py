"""attnscale: numerics for attention scaling in long-context transformers.

Modules
-------
tokens      near-simplex Gaussian tokens and exact simplex tokens (Paper A, spec paper-a.md §6)
attention   the one-layer attention map and the angle ratio lambda (paper-a.md §1, §4)
theory      closed forms of Paper A: gamma_c, Theorem 2.1/2.4 limits, finite-n simplex map
jacobian    Jacobian of the attention layer: JVP, exact and Hutchinson eta (paper-a.md §5)
keys        Paper B keys on the sphere: samplers, ordered weights, blocked attention (paper-b.md)
sphere_theory  Paper B closed forms and limit laws: C(q), Poisson/Weibull limits, quadrature
seeding     SeedSequence-based generators from a job's identity (pipeline.md "Randomness")
io          atomic writes, provenance records
plotting    byte-stable figure output
"""

__version__ = "0.1.0"
