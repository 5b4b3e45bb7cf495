// The local platform, the local stack's two jobs, the best trial's model and the endpoint
// serving it, as `make up` declares them (stacks/Pulumi.local.yaml), from TypeScript
// through the Node Automation API: the program runs inline here, the CLI runs the engine.
// The components are typed by the generated SDK (sdk/nodejs, a dependency by path).
// Usage: ./run up|preview|destroy|outputs [--bad-config] (a wrong accelerator count, to
// see the provider's message).
import * as path from "path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import * as vt from "@vertex-training/sdk";

const badConfig = process.argv.includes("--bad-config");

function program() {
  const platform = new vt.TrainingPlatform("platform", {
    environment: vt.TrainingPlatformEnvironment.Local,
    region: "us-central1",
    images: { trainer: "localhost/vertex-training/trainer:local" },
  });
  const cassavaArgs = ["--workload", "cassava", "--data", "synthetic", "--synthetic-examples", "32",
    "--image-size", "32", "--epochs", "1", "--batch-size-per-replica", "4", "--weights", "none"];
  const cassava = new vt.CustomJob("cassava-mwms", {
    platform,
    displayName: "multiworker-cassava",
    chief: {
      machineType: "n1-standard-8",
      args: cassavaArgs,
      // --bad-config: a count the V100 does not come in, to see the provider's message.
      ...(badConfig ? { accelerator: { type: "NVIDIA_TESLA_V100", count: 3 } } : {}),
    },
    workers: { machineType: "n1-standard-8", replicaCount: 1, args: cassavaArgs },
    scheduling: { timeoutSeconds: 900 },
    pollIntervalSeconds: 5,
  });
  const tuning = new vt.HyperparameterTuningJob("horses-humans-tuning", {
    platform,
    displayName: "horses-humans",
    trial: {
      chief: {
        machineType: "n1-standard-4",
        args: ["--workload", "horses_or_humans", "--data", "synthetic", "--synthetic-examples", "128",
          "--image-size", "32", "--epochs", "2", "--batch-size-per-replica", "16"],
      },
      scheduling: { timeoutSeconds: 900 },
    },
    pollIntervalSeconds: 5,
    maxTrialCount: 6,
    parallelTrialCount: 2,
    study: {
      metrics: [{ metricId: "accuracy", goal: vt.MetricGoal.Maximize }],
      parameters: [
        { type: "DoubleParameter", parameterId: "learning_rate", minValue: 0.001, maxValue: 1, scale: vt.ParameterScale.Log },
        { type: "DoubleParameter", parameterId: "momentum", minValue: 0, maxValue: 1, scale: vt.ParameterScale.Linear },
        { type: "DiscreteParameter", parameterId: "num_units", values: [64, 128, 512] },
      ],
    },
  });
  // The best trial's model, registered (a new version each time the study trains again),
  // and served: locally a prediction server on 127.0.0.1.
  const model = new vt.Model("horses-humans", {
    platform,
    job: tuning,
    displayName: "horses-or-humans",
    versionAliases: ["production"],
  });
  const endpoint = new vt.Endpoint("horses-humans-endpoint", {
    platform,
    displayName: "horses-or-humans",
    deployments: { primary: { model: model.versionName, machineType: "n1-standard-2" } },
  });
  return Promise.resolve({
    bucketUrl: platform.bucketUrl,
    jobs: {
      "cassava-mwms": { name: cassava.jobName, state: cassava.state, modelDir: cassava.modelDir },
      "horses-humans-tuning": {
        name: tuning.jobName, state: tuning.state, modelDir: tuning.modelDir, bestTrial: tuning.bestTrial,
      },
    },
    models: { "horses-humans": { name: model.name, versionName: model.versionName } },
    endpoints: { "horses-humans": { name: endpoint.name, predictUrl: endpoint.predictUrl } },
  });
}

async function main(command: string) {
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: process.env.STACK || "local", projectName: "vertex-training-ts-local", program },
    { workDir: path.resolve(__dirname, "..") },
  );
  const onOutput = (out: string) => process.stdout.write(out);
  const onError = (err: string) => process.stderr.write(err);
  switch (command) {
    case "up": await stack.up({ onOutput, onError }); break;
    case "preview": await stack.preview({ onOutput, onError, diff: true }); break;
    case "destroy": await stack.destroy({ onOutput, onError }); break;
    case "outputs": {
      const outputs = await stack.outputs();
      const plain = Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.value]));
      process.stdout.write(JSON.stringify(plain, null, 2) + "\n");
      break;
    }
    default: throw new Error("usage: ./run up|preview|destroy|outputs");
  }
}

main(process.argv[2]).catch((error) => {
  // The engine's messages were printed as they came (onOutput): no stack trace here.
  const usage = String(error?.message ?? error).startsWith("usage:");
  process.stderr.write(usage ? `${error.message}\n` : `./run ${process.argv[2]} failed (see above)\n`);
  process.exit(usage ? 2 : 1);
});
