// The local platform and the local stack's two jobs, as `make up` declares them
// (stacks/Pulumi.local.yaml), from Go through the Go Automation API: the program runs
// inline here, the CLI runs the engine, and the vertex-training component provider
// builds the resources. Usage: go run . up|preview|destroy|outputs
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
)

// TrainingPlatform is the vertex-training:index:TrainingPlatform component.
type TrainingPlatform struct {
	pulumi.ResourceState
	Environment pulumi.StringOutput `pulumi:"environment"`
	Region      pulumi.StringOutput `pulumi:"region"`
	BucketURL   pulumi.StringOutput `pulumi:"bucketUrl"`
}

// Job is a vertex-training CustomJob or HyperparameterTuningJob component.
type Job struct {
	pulumi.ResourceState
	JobName  pulumi.StringOutput `pulumi:"jobName"`
	State    pulumi.StringOutput `pulumi:"state"`
	ModelDir pulumi.StringOutput `pulumi:"modelDir"`
}

// TuningJob is a vertex-training HyperparameterTuningJob component: a Job's outputs and
// the study's best trial.
type TuningJob struct {
	pulumi.ResourceState
	JobName   pulumi.StringOutput `pulumi:"jobName"`
	State     pulumi.StringOutput `pulumi:"state"`
	ModelDir  pulumi.StringOutput `pulumi:"modelDir"`
	BestTrial pulumi.MapOutput    `pulumi:"bestTrial"`
}

type object = map[string]interface{}

func program(ctx *pulumi.Context) error {
	var platform TrainingPlatform
	err := ctx.RegisterRemoteComponentResource("vertex-training:index:TrainingPlatform", "platform", pulumi.Map{
		"environment": pulumi.String("local"),
		"region":      pulumi.String("us-central1"),
		"images":      pulumi.Any(object{"trainer": "localhost/vertex-training/trainer:local"}),
	}, &platform)
	if err != nil {
		return err
	}
	cassavaArgs := []string{"--workload", "cassava", "--data", "synthetic", "--synthetic-examples", "32",
		"--image-size", "32", "--epochs", "1", "--batch-size-per-replica", "4", "--weights", "none"}
	var cassava Job
	err = ctx.RegisterRemoteComponentResource("vertex-training:index:CustomJob", "cassava-mwms", pulumi.Map{
		"platform":            platform.URN(),
		"displayName":         pulumi.String("multiworker-cassava"),
		"chief":               pulumi.Any(object{"machineType": "n1-standard-8", "args": cassavaArgs}),
		"workers":             pulumi.Any(object{"machineType": "n1-standard-8", "replicaCount": 1, "args": cassavaArgs}),
		"scheduling":          pulumi.Any(object{"timeoutSeconds": 900}),
		"pollIntervalSeconds": pulumi.Float64(5),
	}, &cassava)
	if err != nil {
		return err
	}
	var tuning TuningJob
	err = ctx.RegisterRemoteComponentResource("vertex-training:index:HyperparameterTuningJob", "horses-humans-tuning", pulumi.Map{
		"platform":    platform.URN(),
		"displayName": pulumi.String("horses-humans"),
		"trial": pulumi.Any(object{
			"chief": object{"machineType": "n1-standard-4", "args": []string{"--workload", "horses_or_humans",
				"--data", "synthetic", "--synthetic-examples", "128", "--image-size", "32", "--epochs", "2",
				"--batch-size-per-replica", "16"}},
			"scheduling": object{"timeoutSeconds": 900},
		}),
		"pollIntervalSeconds": pulumi.Float64(5),
		"maxTrialCount":       pulumi.Int(6),
		"parallelTrialCount":  pulumi.Int(2),
		"study": pulumi.Any(object{
			"metrics": []object{{"metricId": "accuracy", "goal": "maximize"}},
			"parameters": []object{
				{"type": "DoubleParameter", "parameterId": "learning_rate", "minValue": 0.001, "maxValue": 1, "scale": "log"},
				{"type": "DoubleParameter", "parameterId": "momentum", "minValue": 0, "maxValue": 1, "scale": "linear"},
				{"type": "DiscreteParameter", "parameterId": "num_units", "values": []float64{64, 128, 512}},
			},
		}),
	}, &tuning)
	if err != nil {
		return err
	}
	ctx.Export("bucketUrl", platform.BucketURL)
	ctx.Export("jobs", pulumi.Map{
		"cassava-mwms": pulumi.Map{"name": cassava.JobName, "state": cassava.State, "modelDir": cassava.ModelDir},
		"horses-humans-tuning": pulumi.Map{"name": tuning.JobName, "state": tuning.State,
			"modelDir": tuning.ModelDir, "bestTrial": tuning.BestTrial},
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
