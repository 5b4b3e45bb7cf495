"""CrossGuard policy pack of the vertex-training stacks (``policy/pack.py``), its logic as
plain functions (``policy/rules.py``)."""
