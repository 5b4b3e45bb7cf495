"""The policy pack: ``pulumi preview --policy-pack policy`` runs it next to the program."""

import sys
from pathlib import Path

# The pack reads the project's own estimates and stack config (vertex_training/).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pulumi_policy import PolicyPack

from policy.pack import POLICY_PACK_NAME, policies

PolicyPack(name=POLICY_PACK_NAME, policies=policies())
