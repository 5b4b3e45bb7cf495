"""What training costs, before anything runs: the price catalog (``prices.json`` read by
``catalog``), estimates and their sum (``estimate``), the budget verdict (``budget``) and
their text (``report``), below the jobs and the platform, which price themselves with it
(``vertex_training.jobs.estimate`` for a job's body), and the sum a program logs
(``program``: ``vt.log_stack_cost``, over what the resources priced). A stack's cost from its
file is a stack command (``python -m vertex_training.stack estimate --stack dev``,
``vertex_training.stack.estimate``): ``cost`` imports nothing above it. The catalog is
refreshed from the Cloud Billing Catalog API by a maintainer's tool outside the package
(``tools/refresh_prices.py``).

Import the submodule you need; nothing here imports TensorFlow, ``aiplatform_v1`` or
``pulumi_gcp``.
"""
