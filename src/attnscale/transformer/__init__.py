"""A real pretrained transformer on the phase diagram (issue 36; docs/real-transformer.md).

Modules: :mod:`~attnscale.transformer.loader` (model files, hashes, errors),
:mod:`~attnscale.transformer.architectures` (the float64 forward pass, one adapter per
architecture), :mod:`~attnscale.transformer.corpus` (real text and its windows),
:mod:`~attnscale.transformer.probes` (the multiplier probes of every head),
:mod:`~attnscale.transformer.bootstrap` (block bootstrap over windows) and
:mod:`~attnscale.transformer.library` (everything used from the rest of the library, in one
place).

Imports :mod:`attnscale.core` and :mod:`attnscale.layer` (in its module ``library`` only),
nothing above (docs/pipeline.md#the-package-layout).
"""

__all__: list[str] = []
