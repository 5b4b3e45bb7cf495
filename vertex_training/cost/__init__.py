"""A stack's cost, computed where the stack is read: ``python -m vertex_training.cost
--stack dev`` (``stack`` estimates a stack's config), ``vt.log_stack_cost`` in the
program (``program``) and the price catalog's refresh from the Cloud Billing Catalog API
(``refresh``). The prices and the estimates themselves are ``vertex_training.pricing``.

Import the submodule you need; nothing here imports TensorFlow, ``aiplatform_v1`` or
``pulumi_gcp``.
"""
