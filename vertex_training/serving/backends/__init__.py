"""The serving backend: the Model Registry and endpoints through the Vertex clients
(``vertex``), on Vertex AI or on the local Vertex of the platform's local root, as the
``BackendSettings`` the jobs carry say. ``google.cloud.aiplatform_v1`` is imported only
where it is used: it must stay out of program import.
"""
