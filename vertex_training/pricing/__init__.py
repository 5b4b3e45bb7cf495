"""What machines, accelerators and Workbench instances cost, before anything runs: the
price catalog (``prices.json`` read by ``catalog``), estimates and their sum
(``estimate``), the budget verdict (``budget``) and their text (``report``).

Below the jobs and the platform, which price themselves with it
(``vertex_training.jobs.estimate`` for a job's body). Stdlib only: nothing here imports
Pulumi, TensorFlow, ``aiplatform_v1`` or any other part of ``vertex_training``.
"""
