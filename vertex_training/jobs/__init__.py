"""Vertex AI training and tuning jobs as infrastructure.

Layers, each leaning on the one before: ``spec`` (frozen specs and their validation,
``accelerators`` holding the GPU rules), ``rest`` (to and from the Vertex REST JSON, in
plain Python) and ``convert`` (to and from ``aiplatform_v1`` messages, through ``rest``);
``backends`` (``vertex`` and ``local`` behind one protocol); ``resources`` (the
``CustomJob`` / ``HyperparameterTuningJob`` dynamic resources); ``declarations`` (jobs
in stack config) and ``program`` (declaring them on a platform). Import the submodule
you need: importing this package loads none of them.
"""
