"""The multi-language component provider: ``TrainingPlatform``, ``CustomJob`` and
``HyperparameterTuningJob`` served to YAML, TypeScript, Go (any Pulumi language) by
``plugins/vertex-training/pulumi-resource-vertex-training``. Its schema is derived from
the Python Args (``schema``); imported only in the provider's own process."""
