package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
