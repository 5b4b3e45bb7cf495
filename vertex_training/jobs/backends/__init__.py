"""The job backend: Vertex AI's JobService through its client (``vertex``), on Google's
Vertex or on the local Vertex of the platform's local root (``_local_vertex`` finds or starts
it), as the resource's ``BackendSettings`` say; ``base`` holds what it reports and raises."""
