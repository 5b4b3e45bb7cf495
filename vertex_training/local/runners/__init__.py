"""What runs on this machine behind the local Vertex (``vertex_training.local``): jobs as
processes with Vertex's environment (``jobs``: one detached supervisor per job, one process
per replica, studies on Optuna), warm pools of interpreters (``pool``, ``worker``), the
model registry and the endpoints' prediction servers (``registry``). No provider imports
them: providers speak the Vertex API.
"""
