"""The policy pack: ``pulumi preview --policy-pack policy`` runs it next to the program."""

import sys
from pathlib import Path

# The pack's code: the library's estimates beside it (vertex_training/), not the files of the
# project it judges (that can be any project, in any directory).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pulumi_policy import PolicyPack

from policy.pack import POLICY_PACK_NAME, policies

PolicyPack(name=POLICY_PACK_NAME, policies=policies())
