// gpushare-scheduler: kube-scheduler (the release pinned in go.mod) with
// the gpushare plugin registered. Every scheduling decision is made by the
// C core (libgpushare) through the plugin's thin cgo shim (docs/plugin.md).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"gpushare.io/scheduler/gpushare"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(gpushare.Name, gpushare.New),
		app.WithPlugin(gpushare.DynResName, gpushare.NewDynRes))))
}
