// Package devserver runs a Temporal server and its Web UI inside the Longhaul
// process, persisted in a SQLite file, so `longhaul dev` needs nothing else
// installed. It is tuned for one machine: a single SQLite connection in WAL
// mode, four history shards and fast queue processors, so a workflow with one
// activity completes in tens of milliseconds rather than a hundred. Given a
// PostgreSQL database instead (Options.DatabaseURL), it keeps its data there
// and writes in parallel (postgres.go).
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul/internal/searchattr"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	// DBFile is the name of the Temporal database inside the data directory.
	DBFile = "temporal.db"
	// LogFile is the name of the Temporal server's log inside the data directory.
	LogFile = "temporal.log"

	clusterName = "active"
	// historyShards is fixed when the database is created and must never change
	// for an existing file.
	historyShards = 4
	// historyCacheSize is how many runs' mutable states the history
	// service keeps in memory (see dynamicConfig).
	historyCacheSize = 2048
)

// Options configure an embedded server.
type Options struct {
	// DataDir holds temporal.db and temporal.log; it is created if missing.
	DataDir string
	// DatabaseURL, when set, is a PostgreSQL database
	// (postgres://user:password@host:port/name?sslmode=…) that keeps the
	// server's data instead of DataDir's temporal.db, with its visibility
	// records in name_visibility beside it. Both are created when missing
	// (which needs CREATEDB) and their schemas set up or upgraded on every
	// start, as Temporal's auto-setup does.
	DatabaseURL string
	// FrontendAddr is the host:port of the frontend gRPC service.
	FrontendAddr string
	// UIAddr is the host:port of the Web UI; empty disables it.
	UIAddr string
	// UIWrite lets the Web UI change runs: terminate, cancel, signal,
	// update, reset, start and batch actions. Without it the UI is
	// read-only: it shows runs and queries them, and its server refuses
	// every other request (HTTP 403, or 405 from the UI's own switch),
	// whoever can reach it and however the path is spelled (see
	// readOnlyAPI).
	UIWrite bool
	// MetricsAddr is the host:port where the server serves its own
	// Prometheus metrics (persistence requests by operation, task
	// latencies, …) at /metrics; empty serves none.
	MetricsAddr string
	// Namespaces are registered on every start (idempotent). Must not be empty.
	Namespaces []string
	// SearchAttributes are custom search attributes registered in every namespace.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Retention is how long every namespace keeps a closed run's history
	// and visibility record before Temporal deletes them, set on every
	// start (a change holds for runs that close after it); zero keeps
	// what the namespace has, 24 hours for a new one. Temporal refuses
	// less than MinRetention.
	Retention time.Duration
	// Logger receives Longhaul-level messages about the server (not Temporal's own logs).
	Logger *slog.Logger
}

// MinRetention is the shortest Options.Retention: Temporal's floor for a
// local namespace (system.namespaceMinRetentionLocal, go.temporal.io/server
// v1.32.1 common/dynamicconfig/constants.go:218-222).
const MinRetention = time.Hour

// Server is a running embedded Temporal server.
type Server struct {
	server       temporal.Server
	ui           *uiserver.Server
	uiDone       chan error
	frontendAddr string
	uiAddr       string
	httpAddr     string
}

// Start creates the database on first use, starts Temporal and the UI, and
// waits until the frontend answers and every namespace and search attribute is
// registered.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("devserver: no namespace")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Retention != 0 && opts.Retention < MinRetention {
		return nil, fmt.Errorf("devserver: retention %v is under Temporal's %v", opts.Retention, MinRetention)
	}
	host, port, err := splitHostPort(opts.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("devserver: frontend address: %w", err)
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("devserver: data dir: %w", err)
	}
	// Fail early and clearly when a port is taken, before Temporal starts
	// half its services.
	if err := checkFree(opts.FrontendAddr); err != nil {
		return nil, err
	}
	if opts.UIAddr != "" {
		if err := checkFree(opts.UIAddr); err != nil {
			return nil, err
		}
	}
	logger := newLogger(opts.DataDir, os.Stderr)
	var st stores
	if opts.DatabaseURL != "" {
		st, err = preparePostgres(ctx, opts.DatabaseURL, opts, logger)
	} else {
		st, err = prepareSQLite(filepath.Join(opts.DataDir, DBFile), opts)
	}
	if err != nil {
		return nil, err
	}
	// The internal ports are picked last, after the schema work, so the
	// moment between picking one and Temporal binding it is short.
	ports, err := freePorts(host, 4)
	if err != nil {
		return nil, err
	}
	p := servicePorts{frontend: port, frontendHTTP: ports[0], history: ports[1], matching: ports[2], worker: ports[3]}
	srv, err := newTemporal(host, p, buildConfig(host, p, st, opts.MetricsAddr), logger)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: start temporal: %w", err)
	}
	s := &Server{
		server:       srv,
		frontendAddr: opts.FrontendAddr,
		httpAddr:     net.JoinHostPort(host, strconv.Itoa(p.frontendHTTP)),
	}
	if err := s.waitReady(ctx, opts); err != nil {
		s.Stop()
		return nil, err
	}
	if opts.UIAddr != "" {
		if err := s.startUI(opts); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// newTemporal builds (does not start) the Temporal server: its four
// services on host at ports p, configured by conf, logging to logger.
func newTemporal(host string, p servicePorts, conf *config.Config, logger tlog.Logger) (temporal.Server, error) {
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("devserver: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("devserver: claim mapper: %w", err)
	}
	hostPort := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(port)))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		// DefaultServices includes the worker service, whose
		// per-namespace worker runs the scheduler that fires Temporal
		// Schedules (/v1/schedules, the retention job): it is on for
		// every namespace unless worker.enableScheduler says otherwise
		// (go.temporal.io/server v1.32.1, temporal/server.go:35-40;
		// service/worker/scheduler/fx.go:103-107, DedicatedWorkerOptions;
		// common/dynamicconfig/constants.go:3500-3504, default true).
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: hostPort(p.frontend),
			primitives.HistoryService:  hostPort(p.history),
			primitives.MatchingService: hostPort(p.matching),
			primitives.WorkerService:   hostPort(p.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("devserver: new server: %w", err)
	}
	return srv, nil
}

// newLogger is the Temporal server's logger: warnings and worse, as JSON,
// to LogFile in dataDir; and the lines that end the process (Temporal's
// Fatal calls os.Exit(1) through zap, e.g. "Failed to start gRPC
// listener" when a port it was given is taken: go.temporal.io/server
// v1.32.1 common/rpc/rpc.go:190-197, common/log/zap_logger.go:211-216)
// to stderr as well, so such an exit names its cause even when the data
// directory is a temporary one that is gone by the time anyone looks.
func newLogger(dataDir string, stderr zapcore.WriteSyncer) tlog.Logger {
	file := tlog.BuildZapLogger(tlog.Config{
		Level:      "warn",
		OutputFile: filepath.Join(dataDir, LogFile),
		Format:     "json",
	})
	fatal := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.Lock(stderr), zap.DPanicLevel)
	return tlog.NewZapLogger(zap.New(zapcore.NewTee(file.Core(), fatal)))
}

// FrontendAddr is the host:port clients and workers dial.
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// UIURL is the Web UI's URL, or "" when the UI is off.
func (s *Server) UIURL() string {
	if s.uiAddr == "" {
		return ""
	}
	return "http://" + s.uiAddr
}

// Stop shuts the UI and the server down. In-flight workflows stay in the
// database and resume on the next start.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
		<-s.uiDone
		s.ui = nil
	}
	if s.server != nil {
		_ = s.server.Stop()
		s.server = nil
	}
}

// prepareSQLite creates the schema when the file is new and registers the
// namespaces (a no-op for those that exist).
func prepareSQLite(file string, opts Options) (stores, error) {
	conf := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: file,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "1",
			"busy_timeout": "10000",
		},
		// More than one connection causes SQLITE_BUSY storms under load.
		MaxConns:     1,
		MaxIdleConns: 1,
	}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(conf); err != nil {
			return stores{}, fmt.Errorf("devserver: create schema in %s: %w", file, err)
		}
	} else if err != nil {
		return stores{}, fmt.Errorf("devserver: %w", err)
	}
	if err := createNamespaces(conf, opts); err != nil {
		return stores{}, err
	}
	// One datastore serves both: the file holds both schemas.
	return stores{name: "sqlite", defaultStore: conf, visibility: conf, shards: historyShards}, nil
}

func buildConfig(host string, p servicePorts, st stores, metricsAddr string) *config.Config {
	var conf config.Config
	if metricsAddr != "" {
		// Temporal builds its handler from this (temporal/fx.go:213 at
		// v1.32.1) and serves it on an HTTP server of its own
		// (common/metrics/opentelemetry_provider.go:138-150).
		conf.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			Framework:     metrics.FrameworkOpentelemetry,
			ListenAddress: metricsAddr,
			HandlerPath:   "/metrics",
		}}
	}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = host
	conf.Persistence.DefaultStore = st.name
	conf.Persistence.VisibilityStore = st.name
	conf.Persistence.NumHistoryShards = st.shards
	conf.Persistence.DataStores = map[string]config.DataStore{st.name: {SQL: st.defaultStore}}
	if st.visibility != st.defaultStore {
		conf.Persistence.VisibilityStore = st.name + visibilitySuffix
		conf.Persistence.DataStores[conf.Persistence.VisibilityStore] = config.DataStore{SQL: st.visibility}
	}
	frontend := net.JoinHostPort(host, strconv.Itoa(p.frontend))
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(host, strconv.Itoa(p.frontendHTTP)),
				ClusterID:              uuid.NewString(),
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	svc := func(grpc, http int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = grpc
		s.RPC.HTTPPort = http
		s.RPC.BindOnIP = host
		return s
	}
	conf.Services = map[string]config.Service{
		"frontend": svc(p.frontend, p.frontendHTTP),
		"history":  svc(p.history, 0),
		"matching": svc(p.matching, 0),
		"worker":   svc(p.worker, 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	return &conf
}

// dynamicConfig tunes the server for one machine. Out of the box the transfer
// queue processor polls 20 times a second per shard, which adds ~100 ms to
// every workflow; at 1000 a workflow with one activity takes ~17 ms.
//
// ForceSearchAttributesCacheRefreshOnRead is off (the Temporal CLI's dev
// server turns it on): on, every workflow start and visibility write
// re-reads the cluster metadata under one process-wide mutex
// (common/searchattribute/manager.go:91-110 at v1.32.1), which a profile
// at 500 concurrent streams showed as 82 % of all mutex contention. The
// cache it refreshes holds the cluster's search attribute types, which an
// SQL visibility store never changes: AddSearchAttributes there writes the
// namespace's aliases with UpdateNamespace instead
// (service/frontend/operator_handler.go:242-324), so searchattr.Ensure's
// additions are seen as before.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		dynamicconfig.TransferProcessorMaxPollRPS.Key():       1000,
		dynamicconfig.TransferProcessorMaxPollHostRPS.Key():   1000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():          1000,
		dynamicconfig.TimerProcessorMaxPollHostRPS.Key():      1000,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key():     1000,
		dynamicconfig.VisibilityProcessorMaxPollHostRPS.Key(): 1000,
		// The history service keeps the mutable state of each run it
		// touched, a closed one too, for an hour (history.cacheTTL) or
		// until the cache is full: with room for 8192, a soak of
		// 300-stream rounds grew the live heap from 115 to 236 MB over
		// its first 3,600 runs, most of it these states. 2048 still
		// holds every run of 1,000 concurrent streams and their previous
		// turns (a run in use is pinned, never evicted); a miss costs a
		// read of the run from the store.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 historyCacheSize,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 200,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():      false,
		dynamicconfig.EnableActivityEagerExecution.Key():                 true,
		dynamicconfig.EnableEagerWorkflowStart.Key():                     true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():        true,
		// A long poll on a run's history (how a client waits for its
		// result, and the API's doorbell for a run's durable events) can
		// miss a change: the history service keeps one pending change per
		// waiter and drops the next (events.NotifierImpl.
		// dispatchHistoryEventNotification), so when a workflow task
		// starts and completes before the waiter wakes, it waits out the
		// poll, 20 s by default; on a busy machine about one turn in a
		// hundred. Polls of a second bound that wait, for one cheap call a
		// second per waiter.
		dynamicconfig.HistoryLongPollExpirationInterval.Key(): time.Second,
		// Each run an API follows holds one long poll of its history (the
		// doorbell of its durable events): room for thousands at once.
		dynamicconfig.FrontendMaxConcurrentLongRunningRequestsPerInstance.Key(): 20000,
		// One node needs no task queue partitions: one makes matching
		// cheaper and lets DescribeTaskQueue see every poller.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
}

// waitReady blocks until the frontend serves every namespace and the custom
// search attributes exist in each (added through the operator API so a
// database created by an older version gains new attributes).
func (s *Server) waitReady(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort: s.frontendAddr,
		Logger:   quietLogger{},
	})
	if err != nil {
		return fmt.Errorf("devserver: dial frontend: %w", err)
	}
	defer c.Close()
	for _, ns := range opts.Namespaces {
		var d *workflowservice.DescribeNamespaceResponse
		for {
			var err error
			d, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("devserver: namespace %q not ready: %w", ns, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if _, err := searchattr.Ensure(ctx, c.OperatorService(), ns, opts.SearchAttributes); err != nil {
			return fmt.Errorf("devserver: %w", err)
		}
		if r := opts.Retention; r != 0 && d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != r {
			if err := setRetention(ctx, c.WorkflowService(), ns, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddNamespace registers namespace ns on the running server, with the
// custom search attributes attrs (opts.SearchAttributes' kind), and waits
// until the frontend serves it with them: one server can hold many
// isolated tenants, as the test harness's shared server does (one
// namespace per test stack).
func (s *Server) AddNamespace(ctx context.Context, ns string, attrs map[string]enumspb.IndexedValueType) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: s.frontendAddr, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("devserver: dial frontend: %w", err)
	}
	defer c.Close()
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("devserver: register namespace %q: %w", ns, err)
	}
	if err := s.waitReady(ctx, Options{Namespaces: []string{ns}, SearchAttributes: attrs}); err != nil {
		return err
	}
	// The frontend maps the attributes through its namespace cache, which
	// learns the new namespace's (SQL visibility keeps them as the
	// namespace's aliases) on its next refresh: a start before then is
	// refused ("no mapping defined for search attribute"). A count that
	// names each attribute is refused the same way until then.
	var q []string
	for name := range attrs {
		q = append(q, name+" IS NULL")
	}
	slices.Sort(q)
	for {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns, Query: strings.Join(q, " AND ")})
		if err == nil || len(q) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: the search attributes of namespace %q are not mapped yet: %w", ns, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setRetention makes ns keep closed runs for retention.
func setRetention(ctx context.Context, ws workflowservice.WorkflowServiceClient, ns string, retention time.Duration) error {
	_, err := ws.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: ns,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	})
	if err != nil {
		return fmt.Errorf("devserver: retention of namespace %q: %w", ns, err)
	}
	return nil
}

func (s *Server) startUI(opts Options) error {
	host, port, err := splitHostPort(opts.UIAddr)
	if err != nil {
		return fmt.Errorf("devserver: UI address: %w", err)
	}
	defaultNS := opts.Namespaces[0]
	uiOpts := []uiserveroptions.ServerOption{uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: s.frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    defaultNS,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
		// The UI has no login here: anyone who reaches it could otherwise
		// terminate or reset any run.
		DisableWriteActions: !opts.UIWrite,
	})}
	if !opts.UIWrite {
		// The UI's own switch lets crafted writes through (see readOnlyAPI).
		uiOpts = append(uiOpts, uiserveroptions.WithAPIMiddleware([]uiapi.Middleware{readOnlyAPI}))
	}
	s.ui = uiserver.NewServer(uiOpts...)
	s.uiDone = make(chan error, 1)
	go func() { s.uiDone <- s.ui.Start() }()
	// The UI's Start blocks; wait until it accepts connections or fails.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-s.uiDone:
			s.ui = nil
			return fmt.Errorf("devserver: UI on %s: %w", opts.UIAddr, err)
		default:
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			s.uiAddr = net.JoinHostPort(host, strconv.Itoa(port))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devserver: UI on %s did not start: %w", opts.UIAddr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quietLogger drops the SDK client's own log lines during start-up probing.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
