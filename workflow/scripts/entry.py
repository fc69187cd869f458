"""The one script of every rule: hands the job to attnscale.pipeline.adapter.run_rule.

The rule names the library function in ``params: entry="module:function"``; inputs are loaded,
params passed as keyword arguments and the returned tables/figures written atomically
(docs/pipeline.md#how-a-rule-runs). ``src/`` of this checkout goes first on the path, so the
workflow runs this checkout's library whether or not it is pip-installed (``--sdm conda`` too).
In a local run the job runs in a child of the run's warm server, which has the heavy libraries
imported already, and this process waits for it (docs/pipeline.md#warm-jobs).
"""

import sys
from pathlib import Path

sm = snakemake  # noqa: F821  (injected by Snakemake)
sys.path.insert(0, str(Path(sm.scriptdir).resolve().parents[1] / "src"))

from attnscale.pipeline.warm import delegate  # noqa: E402

status = delegate(sys.argv[0])  # the script Snakemake wrote; None: no warm server, run here
if status is not None:
    sys.exit(status)

from attnscale.pipeline.adapter import run_rule  # noqa: E402

run_rule(sm)
