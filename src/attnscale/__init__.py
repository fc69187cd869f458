"""attnscale: numerics for attention scaling in long-context transformers.

Modules
-------
tokens      near-simplex Gaussian tokens and exact simplex tokens (Paper A, docs/paper-a.md#gaussian-near-simplex-tokens)
attention   the one-layer attention map and the angle ratio lambda (docs/paper-a.md)
theory      closed forms of Paper A: gamma_c, Theorem 2.1/2.4 limits, finite-n simplex map
jacobian    Jacobian of the attention layer: JVP, exact and Hutchinson eta (docs/paper-a.md#the-jacobian-norm-eta)
keys        Paper B keys on the sphere: samplers, ordered weights, blocked attention (paper-b.md)
sphere_theory  Paper B closed forms: C(q), the exact D2Q law, subcritical and Weibull limits
sphere_quadrature  Paper B quadrature on S^2: cap probabilities, the n = inf output at fixed beta
poisson_limit  Paper B critical Poisson limit of the top weight
marked_poisson  Paper B critical output law: marked-Poisson limit, samplers, Mecke moments
seeding     SeedSequence-based generators from a job's identity (pipeline.md "Randomness")
io          atomic writes, provenance records
plotting    byte-stable figure output
"""

__version__ = "0.1.0"
