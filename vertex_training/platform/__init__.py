"""One ``pulumi.ComponentResource`` per concern of the training environment, each built
from a frozen ``...Args`` (never from config) by ``platform.TrainingPlatform``. Import the
modules you need directly: each pulls in only its own pulumi_gcp submodules, which keeps
program start-up fast.
"""
