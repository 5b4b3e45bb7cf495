"""Constants shared by the trainer and the tuning-job specs (no TensorFlow import here)."""

HYPERTUNE_METRIC_TAG = "accuracy"
"""The metric the horses_or_humans trainer reports through cloudml-hypertune and the
tuning job's study maximizes."""
