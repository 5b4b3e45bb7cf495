"""A trial: score one point of the search space and report it as Vertex trials do.

Stands in for a training program: it reads the flags the study sets and reports its
metric with cloudml-hypertune, which the local backend (like Vertex) reads back.
"""

import argparse

import hypertune


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--x", type=float, required=True)
    parser.add_argument("--shape", choices=("bowl", "ridge"), required=True)
    parser.add_argument("--y", type=float, default=0.5)
    args = parser.parse_args()
    score = -((args.x - 0.3) ** 2)
    if args.shape == "bowl":
        score -= (args.y - 0.7) ** 2
    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag="score", metric_value=score, global_step=1
    )
    print(f"x={args.x} shape={args.shape} y={args.y} score={score:.4f}")


if __name__ == "__main__":
    main()
