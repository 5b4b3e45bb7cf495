// A thin typed wrapper over the vertex-training component provider's components
// (remote components: the provider, in Python, builds the resources). The argument
// shapes are the provider's schema (`pulumi package get-schema`), which is derived from
// the Python Args: names in camelCase, nested the same way, validated by the provider.
import * as pulumi from "@pulumi/pulumi";

/** Any argument object of the schema: validated by the provider, which names the key
 * path, what is valid and the fix of every problem. */
export type Args = { [key: string]: pulumi.Input<unknown> };

export class TrainingPlatform extends pulumi.ComponentResource {
  public readonly environment!: pulumi.Output<string>;
  public readonly project!: pulumi.Output<string>;
  public readonly region!: pulumi.Output<string>;
  public readonly bucketUrl!: pulumi.Output<string>;

  constructor(name: string, args: Args, opts?: pulumi.ComponentResourceOptions) {
    const outputs = { environment: undefined, project: undefined, region: undefined, bucketUrl: undefined };
    super("vertex-training:index:TrainingPlatform", name, { ...outputs, ...args }, opts, true);
  }
}

/** A job's args: the Args of its kind, and `platform`, the platform's URN. */
export type JobArgs = Args & { platform: pulumi.Input<string> };

const jobOutputs = { jobName: undefined, state: undefined, consoleUrl: undefined, modelDir: undefined, endTime: undefined };

/** The outputs every job has, CustomJob's and HyperparameterTuningJob's. */
abstract class Job extends pulumi.ComponentResource {
  public readonly jobName!: pulumi.Output<string>;
  public readonly state!: pulumi.Output<string>;
  public readonly consoleUrl!: pulumi.Output<string>;
  public readonly modelDir!: pulumi.Output<string>;
  public readonly endTime!: pulumi.Output<string>;
}

export class CustomJob extends Job {
  constructor(name: string, args: JobArgs, opts?: pulumi.ComponentResourceOptions) {
    super("vertex-training:index:CustomJob", name, { ...jobOutputs, ...args }, opts, true);
  }
}

export interface TrialResult {
  trialId: string;
  state: string;
  parameters: { [id: string]: number | string };
  finalMetrics: { [id: string]: number };
}

export class HyperparameterTuningJob extends Job {
  public readonly bestTrial!: pulumi.Output<TrialResult>;
  public readonly trials!: pulumi.Output<TrialResult[]>;

  constructor(name: string, args: JobArgs, opts?: pulumi.ComponentResourceOptions) {
    const outputs = { ...jobOutputs, bestTrial: undefined, trials: undefined };
    super("vertex-training:index:HyperparameterTuningJob", name, { ...outputs, ...args }, opts, true);
  }
}
