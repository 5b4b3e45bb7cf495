"""Vertex AI training and tuning jobs as infrastructure: the body is the job.

``api`` (typed Args that build a job's Vertex REST body), ``view`` (a read-only view of
a body: what rules and estimates read), ``rules`` (the hardware catalog and the API's
limits over a view; ``Finding`` is in ``finding``), ``estimate`` (a job's cost from its
body), ``declarations`` (jobs in stack config), ``backends`` (``vertex`` and ``local``
behind one protocol, reporting ``records``) and ``resources`` (the ``CustomJob`` /
``HyperparameterTuningJob`` dynamic resources). Import the submodule you need: importing
this package loads none of them.
"""
