// The local platform, the local stack's two jobs, the best trial's model and the endpoint
// serving it, as `make up` declares them (stacks/Pulumi.local.yaml), from Go through the
// Go Automation API: the program runs inline here, the CLI runs the engine, and the
// vertex-training component provider builds the resources, typed by the generated SDK
// (sdk/go, a `replace` in go.mod). Usage: ./run up|preview|destroy|outputs
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	vt "vertex-training/sdk/go/vertextraining"
)

func ptr[T any](value T) *T { return &value }

func program(ctx *pulumi.Context) error {
	platform, err := vt.NewTrainingPlatform(ctx, "platform", &vt.TrainingPlatformArgs{
		Environment: ptr(vt.TrainingPlatformEnvironmentLocal),
		Region:      ptr("us-central1"),
		Images:      map[string]interface{}{"trainer": "localhost/vertex-training/trainer:local"},
	})
	if err != nil {
		return err
	}
	cassavaArgs := pulumi.ToStringArray([]string{"--workload", "cassava", "--data", "synthetic",
		"--synthetic-examples", "32", "--image-size", "32", "--epochs", "1", "--batch-size-per-replica", "4",
		"--weights", "none"})
	cassava, err := vt.NewCustomJob(ctx, "cassava-mwms", &vt.CustomJobArgs{
		Platform:    platform,
		DisplayName: pulumi.String("multiworker-cassava"),
		Chief:       vt.WorkerPoolArgs{MachineType: pulumi.String("n1-standard-8"), Args: cassavaArgs},
		Workers: &vt.WorkerPoolArgs{MachineType: pulumi.String("n1-standard-8"), ReplicaCount: pulumi.Int(1),
			Args: cassavaArgs},
		Scheduling:          &vt.SchedulingArgs{TimeoutSeconds: pulumi.Float64(900)},
		PollIntervalSeconds: ptr(5.0),
	})
	if err != nil {
		return err
	}
	tuning, err := vt.NewHyperparameterTuningJob(ctx, "horses-humans-tuning", &vt.HyperparameterTuningJobArgs{
		Platform:    platform,
		DisplayName: pulumi.String("horses-humans"),
		Trial: vt.TrialJobArgs{
			Chief: vt.WorkerPoolArgs{MachineType: pulumi.String("n1-standard-4"), Args: pulumi.ToStringArray([]string{
				"--workload", "horses_or_humans", "--data", "synthetic", "--synthetic-examples", "128",
				"--image-size", "32", "--epochs", "2", "--batch-size-per-replica", "16"})},
			Scheduling: &vt.SchedulingArgs{TimeoutSeconds: pulumi.Float64(900)},
		},
		PollIntervalSeconds: ptr(5.0),
		MaxTrialCount:       pulumi.Int(6),
		ParallelTrialCount:  pulumi.Int(2),
		Study: vt.StudyArgs{
			Metrics: []vt.MetricArgs{{MetricId: ptr("accuracy"), Goal: ptr(vt.MetricGoalMaximize)}},
			Parameters: []vt.ParameterArgs{
				{Type: "DoubleParameter", ParameterId: ptr("learning_rate"), MinValue: 0.001, MaxValue: 1,
					Scale: ptr(vt.ParameterScaleLog)},
				{Type: "DoubleParameter", ParameterId: ptr("momentum"), MinValue: 0, MaxValue: 1,
					Scale: ptr(vt.ParameterScaleLinear)},
				{Type: "DiscreteParameter", ParameterId: ptr("num_units"), Values: []float64{64, 128, 512}},
			},
		},
	})
	if err != nil {
		return err
	}
	// The best trial's model, registered (a new version each time the study trains again),
	// and served: locally a prediction server on 127.0.0.1.
	model, err := vt.NewModel(ctx, "horses-humans", &vt.ModelArgs{
		Platform:       platform,
		Job:            tuning,
		DisplayName:    pulumi.String("horses-or-humans"),
		VersionAliases: []string{"production"},
	})
	if err != nil {
		return err
	}
	endpoint, err := vt.NewEndpoint(ctx, "horses-humans-endpoint", &vt.EndpointArgs{
		Platform:    platform,
		DisplayName: pulumi.String("horses-or-humans"),
		Deployments: map[string]vt.DeploymentInput{
			"primary": vt.DeploymentArgs{Model: model.VersionName, MachineType: ptr("n1-standard-2")},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("bucketUrl", platform.BucketUrl)
	ctx.Export("jobs", pulumi.Map{
		"cassava-mwms": pulumi.Map{"name": cassava.JobName, "state": cassava.State, "modelDir": cassava.ModelDir},
		"horses-humans-tuning": pulumi.Map{"name": tuning.JobName, "state": tuning.State,
			"modelDir": tuning.ModelDir, "bestTrial": tuning.BestTrial},
	})
	ctx.Export("models", pulumi.Map{
		"horses-humans": pulumi.Map{"name": model.Name, "versionName": model.VersionName},
	})
	ctx.Export("endpoints", pulumi.Map{
		"horses-humans": pulumi.Map{"name": endpoint.Name, "predictUrl": endpoint.PredictUrl},
	})
	return nil
}

func run(command string) error {
	ctx := context.Background()
	here, err := os.Getwd() // ./run runs it in this directory (Pulumi.yaml: packages)
	if err != nil {
		return err
	}
	stackName := os.Getenv("STACK")
	if stackName == "" {
		stackName = "local"
	}
	stack, err := auto.UpsertStackInlineSource(ctx, stackName, "vertex-training-go-local", program,
		auto.WorkDir(here))
	if err != nil {
		return err
	}
	switch command {
	case "up":
		_, err = stack.Up(ctx, optup.ProgressStreams(os.Stdout), optup.ErrorProgressStreams(os.Stderr))
	case "preview":
		_, err = stack.Preview(ctx, optpreview.Diff(), optpreview.ProgressStreams(os.Stdout),
			optpreview.ErrorProgressStreams(os.Stderr))
	case "destroy":
		_, err = stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout), optdestroy.ErrorProgressStreams(os.Stderr))
	case "outputs":
		outputs, outErr := stack.Outputs(ctx)
		if outErr != nil {
			return outErr
		}
		plain := map[string]interface{}{}
		for key, value := range outputs {
			plain[key] = value.Value
		}
		text, _ := json.MarshalIndent(plain, "", "  ")
		fmt.Println(string(text))
	default:
		fmt.Fprintln(os.Stderr, "usage: ./run up|preview|destroy|outputs")
		os.Exit(2)
	}
	return err
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ./run up|preview|destroy|outputs")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		// The engine's messages were printed as they came: no stack trace here.
		fmt.Fprintf(os.Stderr, "./run %s failed (see above)\n", os.Args[1])
		os.Exit(1)
	}
}
