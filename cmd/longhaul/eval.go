package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/worker"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

const evalUsage = `Usage:
  longhaul eval export (--principal P | --all-principals) [--agent ID] [--since 24h | --from T --to T] [--limit N] --out DIR
  longhaul eval export --run ID... --out DIR
      write a case file per completed run (its input, tool calls with their results, plan, answer, usage);
      a query names whose runs: one principal's, or every principal's only when --all-principals says so
  longhaul eval run --cases DIR [--graders FILE] [--agents DIR] [--model [ROLE=]MODEL]... [--grade-model MODEL]
                    [--parallel N] [--id ID] --out DIR
      replay the cases with every tool result pinned (no tool runs), grade them, write report.json and
      report.md; exit status 1 when a case fails. Rerun with the same --id to resume an interrupted one.
`

// evalCommand runs `longhaul eval …` and returns the exit status. Each
// subcommand's flags are read before anything starts, so --help (and a
// wrong flag) dial nothing.
func evalCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, evalUsage)
		return 0
	}
	if len(args) == 0 || (args[0] != "export" && args[0] != "run") {
		if len(args) > 0 {
			fmt.Fprintf(stderr, "longhaul eval: unknown subcommand %q\n", args[0])
		}
		fmt.Fprint(stderr, evalUsage)
		return 2
	}
	usage := func(w io.Writer) { fmt.Fprint(w, evalUsage) }
	var run func(context.Context, config.Config, *slog.Logger, io.Writer) (int, error)
	if args[0] == "export" {
		var f exportFlags
		if code, stop := parseFlags(f.flagSet(), args[1:], usage, stdout, stderr); stop {
			return code
		}
		run = func(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) (int, error) {
			return evalExport(ctx, cfg, f, log, out)
		}
	} else {
		var f runFlags
		if code, stop := parseFlags(f.flagSet(), args[1:], usage, stdout, stderr); stop {
			return code
		}
		run = func(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) (int, error) {
			return evalRun(ctx, cfg, f, log, out)
		}
	}
	cfg, log, ctx, done, ok := startCommand("eval", stderr)
	if !ok {
		return 2
	}
	defer done()
	code, err := run(ctx, cfg, log, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "longhaul eval %s: %s\n", args[0], redact.URLs(err.Error()))
	}
	return code
}

// multi is a flag given any number of times.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// exportFlags are eval export's flags.
type exportFlags struct {
	agent, out, from, to, principal string
	all                             bool
	since                           time.Duration
	runs                            multi
	limit                           int
}

// flagSet is eval export's flags, read into f.
func (f *exportFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("longhaul eval export", flag.ContinueOnError)
	fs.StringVar(&f.agent, "agent", "", "only runs of this agent")
	fs.DurationVar(&f.since, "since", 0, "only runs started this long ago or later (e.g. 24h)")
	fs.StringVar(&f.from, "from", "", "only runs started at or after this time (RFC 3339)")
	fs.StringVar(&f.to, "to", "", "only runs started before this time (RFC 3339)")
	fs.Var(&f.runs, "run", "a run id (repeat the flag for more); no query then")
	fs.IntVar(&f.limit, "limit", 100, "at most this many runs")
	fs.StringVar(&f.out, "out", "", "the directory to write the case files to")
	fs.StringVar(&f.principal, "principal", "", "only runs of this principal (as GET /v1/usage names it)")
	fs.BoolVar(&f.all, "all-principals", false, "runs of every principal: their messages and tool results, in files meant to be committed")
	return fs
}

func evalExport(ctx context.Context, cfg config.Config, f exportFlags, log *slog.Logger, out io.Writer) (int, error) {
	if f.out == "" {
		return 2, errors.New("--out is required")
	}
	if err := checkExportScope(f); err != nil {
		return 2, err
	}
	if cfg.TemporalAddress == "" {
		return 2, errors.New("LONGHAUL_TEMPORAL_ADDRESS is required (host:port of the Temporal frontend the runs are on)")
	}
	c, err := dial(ctx, cfg, cfg.TemporalAddress, log, nil)
	if err != nil {
		return 1, err
	}
	defer c.Close()
	ids := []string(f.runs)
	if len(ids) == 0 {
		q, err := exportQuery(f, time.Now())
		if err != nil {
			return 2, err
		}
		if ids, err = listRuns(ctx, c, q, f.limit); err != nil {
			return 1, err
		}
	}
	secrets := environSecrets(os.Environ())
	for _, id := range ids {
		cs, err := evals.ReadRun(ctx, c, id)
		if err != nil {
			fmt.Fprintf(out, "skipped %s: %s\n", id, err)
			continue
		}
		if cs, err = redactCase(cs, secrets); err != nil {
			return 1, fmt.Errorf("redact run %s: %w", id, err)
		}
		p, err := evals.WriteCase(f.out, cs)
		if err != nil {
			return 1, err
		}
		fmt.Fprintf(out, "%s: %s, %d tool calls\n", p, cs.Agent, len(cs.Calls))
	}
	return 0, nil
}

// checkExportScope refuses an export by query that names no principal and
// does not say it takes every principal's runs (--all-principals): case
// files hold users' messages and tool results, and are meant to be
// committed. Runs named by id (--run) are the operator's choice already.
func checkExportScope(f exportFlags) error {
	switch {
	case len(f.runs) > 0:
		return nil
	case f.principal != "" && f.all:
		return errors.New("send --principal or --all-principals, not both")
	case f.principal != "" && !runs.LiteralOK(f.principal):
		return errors.New("--principal: not a principal's name (no quotes, backslashes or control characters)")
	case f.principal == "" && !f.all:
		return errors.New("name whose runs to export: --principal P, or --all-principals for everyone's (their messages and tool results go into the case files)")
	}
	return nil
}

// exportQuery is the visibility query of the completed agent runs f asks
// for.
func exportQuery(f exportFlags, now time.Time) (string, error) {
	q := []string{"WorkflowType = " + runs.QuoteLiteral(contract.AgentWorkflowName), "ExecutionStatus = 'Completed'"}
	if f.principal != "" {
		q = append(q, contract.SearchAttrUser.GetName()+" = "+runs.QuoteLiteral(f.principal))
	}
	if f.agent != "" {
		q = append(q, contract.SearchAttrAgent.GetName()+" = "+runs.QuoteLiteral(f.agent))
	}
	if f.since > 0 {
		q = append(q, "StartTime >= "+runs.QuoteLiteral(now.Add(-f.since).UTC().Format(time.RFC3339)))
	}
	for _, b := range []struct{ v, op string }{{f.from, ">="}, {f.to, "<"}} {
		if b.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, b.v)
		if err != nil {
			return "", fmt.Errorf("--from and --to are RFC 3339 times: %w", err)
		}
		q = append(q, "StartTime "+b.op+" "+runs.QuoteLiteral(t.UTC().Format(time.RFC3339)))
	}
	return strings.Join(q, " AND "), nil
}

// listRuns lists the workflow ids of up to limit runs matching q.
func listRuns(ctx context.Context, c client.Client, q string, limit int) ([]string, error) {
	var ids []string
	var token []byte
	for len(ids) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: int32(min(limit, 100))})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if len(ids) < limit {
				ids = append(ids, e.GetExecution().GetWorkflowId())
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return ids, nil
}

// runFlags are eval run's flags.
type runFlags struct {
	cases, graders, agents, gradeModel, id, out string
	models                                      multi
	parallel                                    int
}

// flagSet is eval run's flags, read into f.
func (f *runFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("longhaul eval run", flag.ContinueOnError)
	fs.StringVar(&f.cases, "cases", "", "the directory of case files")
	fs.StringVar(&f.graders, "graders", "", "the graders file (YAML); none: the recorded answer and tool calls")
	fs.StringVar(&f.agents, "agents", "", "candidate agent and skill files, loaded over the built-ins (as LONGHAUL_SKILLS_DIR)")
	fs.Var(&f.models, "model", "MODEL for every model call, or ROLE=MODEL for one role (plan, review, classify, answer, translate, compact)")
	fs.StringVar(&f.gradeModel, "grade-model", "", "the model rubric graders use (the grade role); none: the agent's")
	fs.IntVar(&f.parallel, "parallel", contract.DefaultEvalParallel, "cases replayed at once")
	fs.StringVar(&f.id, "id", "", "the evaluation's id; rerun with it to resume (default: made of the inputs)")
	fs.StringVar(&f.out, "out", "", "the directory to write report.json and report.md to")
	return fs
}

func evalRun(ctx context.Context, cfg config.Config, f runFlags, log *slog.Logger, out io.Writer) (int, error) {
	if f.cases == "" || f.out == "" {
		return 2, errors.New("--cases and --out are required")
	}
	in, err := evalInput(f)
	if err != nil {
		return 2, err
	}
	if f.agents != "" {
		cfg.SkillsDir = f.agents
	}
	res, err := runEvaluation(ctx, cfg, f, in, log)
	if err != nil {
		return 1, err
	}
	rep := evals.NewReport(res.Cases)
	if err := rep.Write(f.out); err != nil {
		return 1, err
	}
	if err := rep.Table(out); err != nil {
		return 1, err
	}
	if rep.Failed > 0 {
		return 1, nil
	}
	return 0, nil
}

// evalInput reads the cases and graders f names.
func evalInput(f runFlags) (contract.EvalInput, error) {
	in := contract.EvalInput{GradeModel: f.gradeModel, Parallel: f.parallel}
	cases, err := evals.ReadCases(f.cases)
	if err != nil {
		return in, err
	}
	for _, c := range cases {
		in.Cases = append(in.Cases, c.EvalCase)
	}
	if f.graders != "" {
		data, err := os.ReadFile(f.graders)
		if err != nil {
			return in, err
		}
		in.Graders = string(data)
	}
	if _, err := evals.ParseGraders([]byte(in.Graders)); err != nil {
		return in, err
	}
	return in, setModels(&in, f.models)
}

// setModels reads --model flags into in.
func setModels(in *contract.EvalInput, flags []string) error {
	m := &in.Models
	roles := map[string]*string{"plan": &m.Plan, "review": &m.Review, "classify": &m.Classify, "answer": &m.Answer, "translate": &m.Translate, "compact": &m.Compact}
	for _, v := range flags {
		role, ref, ok := strings.Cut(v, "=")
		if !ok {
			in.Model = v
			continue
		}
		p, known := roles[role]
		if !known || ref == "" {
			return fmt.Errorf("--model %s: the roles are plan, review, classify, answer, translate, compact", v)
		}
		*p = ref
	}
	return nil
}

// evalID is the evaluation's workflow id: --id, else a hash of what it
// evaluates, so the same command run again resumes it.
func evalID(f runFlags, in contract.EvalInput) string {
	if f.id != "" {
		return "eval-" + f.id
	}
	// JSON, not %v: the same inputs hash alike in every process.
	data, _ := json.Marshal(in)
	h := sha256.New()
	h.Write(data)
	h.Write([]byte("|" + f.agents))
	return "eval-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// runEvaluation runs the Evaluation workflow on a worker of this process,
// on a task queue of its own, with the candidate catalog and models of cfg
// (no other worker takes its replays), and waits for its result.
func runEvaluation(ctx context.Context, cfg config.Config, f runFlags, in contract.EvalInput, log *slog.Logger) (contract.EvalResult, error) {
	r, err := openRemote(ctx, cfg, log, "eval run")
	if err != nil {
		return contract.EvalResult{}, err
	}
	defer r.close()
	docs, set, closeTools, err := openTools(ctx, cfg, r.catalog, &r.tools, log)
	if err != nil {
		return contract.EvalResult{}, err
	}
	defer closeTools()
	bus, closeBus, err := openBus(cfg, nil, "longhaul eval", log)
	if err != nil {
		return contract.EvalResult{}, err
	}
	defer closeBus()
	id := evalID(f, in)
	in.TaskQueue = cfg.TaskQueue + "-" + id
	acts := newActivities(cfg, r.catalog, set.Registry, r.blobs, r.memory, docs, bus, r.temporal, log)
	w := worker.New(r.temporal, in.TaskQueue, acts, worker.Tuning{}, worker.Versioning{})
	if err := w.Start(); err != nil {
		return contract.EvalResult{}, err
	}
	defer w.Stop()
	return startEvaluation(ctx, r.temporal, id, in)
}

// startEvaluation starts (or, when it already runs, attaches to) the
// Evaluation id on in.TaskQueue and waits for its result.
func startEvaluation(ctx context.Context, c client.Client, id string, in contract.EvalInput) (contract.EvalResult, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                in.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            fmt.Sprintf("evaluation of %d cases", len(in.Cases)),
	}, contract.EvaluationWorkflowName, in)
	if err != nil {
		return contract.EvalResult{}, fmt.Errorf("start the evaluation: %w", err)
	}
	var res contract.EvalResult
	if err := run.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("evaluation %s: %w", id, err)
	}
	return res, nil
}
