"""What jobs and stacks cost before they run: a price catalog (``prices.json``), pure
estimates over job bodies (``estimate``), their text (``report``), a stack's estimate
(``stack``) and the catalog's refresh from the Cloud Billing Catalog API (``refresh``).

Import the submodule you need; nothing here imports TensorFlow, ``aiplatform_v1``,
``pulumi_gcp`` or ``vertex_training.platform``.
"""
