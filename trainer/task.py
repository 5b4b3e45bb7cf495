"""Entry point: ``python -m trainer.task --workload {cassava,horses_or_humans} ...``.

TF 2.21 ships Keras 3, whose ``fit`` fails under MultiWorkerMirroredStrategy
(keras-team/keras#20585). We train with tf-keras (Keras 2) instead, which TensorFlow picks
when ``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow is first imported: hence the very
first statements below.
"""

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import logging
import sys
from collections.abc import Sequence

from trainer.cluster import ClusterConfigError, parse_cluster_role, require_all_reduce_cluster
from trainer.config import ProfileStepsError, parse_config

logger = logging.getLogger("trainer")


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    config = parse_config(argv)  # exits 2 with a message on a bad flag, before TF loads
    try:
        role = parse_cluster_role()
        logger.info("role %s (from %s), chief=%s", role.label, role.source, role.is_chief)
        if not role.in_training_cluster:
            # The evaluator pool gets the same image and args; it has nothing to join.
            logger.info("%s is not part of the training cluster; nothing to train", role.label)
            return 0
        require_all_reduce_cluster(role)
    except ClusterConfigError as error:
        logger.error("%s", error)
        return 2

    from trainer.training import run_training  # imports TensorFlow

    try:
        run_training(config, role)
    except (ClusterConfigError, ProfileStepsError) as error:
        logger.error("%s", error)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
