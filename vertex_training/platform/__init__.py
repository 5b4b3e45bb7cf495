"""One ``pulumi.ComponentResource`` per concern of the training environment.

Components take a frozen ``...Args`` and never read config; ``vertex_training.platform.platform``
builds them from the validated stack config. Import the modules you need directly
(``from vertex_training.platform.storage import TrainingBucket``): each pulls in only its
own pulumi_gcp submodules, which keeps program start-up fast.
"""
