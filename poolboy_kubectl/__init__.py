"""``kubectl poolboy``: a kubectl plugin that shows a claim's way through Poolboy and why it is not Ready.

kubectl runs any executable named ``kubectl-poolboy`` on ``PATH`` for ``kubectl poolboy``; the project's
``pyproject.toml`` installs one (``[project.scripts]``). It is a client of the API with the user's own kubeconfig,
as kubectl is, and imports nothing of the operator's adapters: :mod:`.reading` asks the API server for the claim
and what it leads to (and notes what the user may not read), :mod:`.observed` is what it found, :mod:`.trace` turns
that into a tree, :mod:`.render` prints it, :mod:`.why` explains a claim that is not Ready and :mod:`.cli` is the
command line (docs/kubectl-poolboy.md).
"""
