"""`headstart check`: whether an install of headstart fits together, or whether a cluster
is ready for one (`--pre-install`), one line per check with a fix for each failure.

The decisions are pure (`core/`: one small function per check, from observed objects to
a `Result`); `reader.py` and `reader_rights.py` read the cluster with the user's
kubeconfig, `shipped.py` reads the repository's RBAC manifests, `report.py` renders the
results, `commands.py` runs the command and `cli.py` builds its parser.

It lives in the top layer (pyproject.toml, [tool.importlinter]) because it reads both the
extender's and the overprovisioner's configs with their own parsers (a config the
process would refuse is a failed check, never a second copy of its rules), and those two
packages share a layer and may not import each other.
"""
