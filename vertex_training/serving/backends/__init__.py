"""Serving backends behind one small protocol (``base.ServingBackend``): the Model Registry
and endpoints on Vertex AI, or their local twin under the local root.

Both are chosen by the same ``BackendSettings`` the jobs carry (the providers' ``backends``),
so a stack's models and endpoints go where its jobs run. Each implementation is imported
only when it is used: ``google.cloud.aiplatform_v1`` must stay out of program import.
"""
