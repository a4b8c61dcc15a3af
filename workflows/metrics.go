package workflows

// MetricRuns counts finished runs by agent and outcome (completed, failed,
// cancelled); Prometheus calls it longhaul_runs_total. A run that
// continues as new is counted once, when it finishes.
const MetricRuns = "longhaul_runs"

// MetricHelp describes the workflows' series for Prometheus.
var MetricHelp = map[string]string{
	MetricRuns: "Finished runs, by agent and outcome (completed, failed, cancelled).",
}
