"""Job backends behind one small protocol (``base.JobBackend``): Vertex AI (``vertex``) and
this machine (``local``). The job provider picks one per call from the resource's
``BackendSettings``."""
