package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/tools/common/schema"
	tsql "go.temporal.io/server/tools/sql"
)

const (
	// postgresShards is the history shard count of a server on
	// PostgreSQL, fixed when its database is created (Temporal refuses to
	// start on a database made with another count). More shards than
	// SQLite's four let the history service write runs of different
	// shards at once, which PostgreSQL, unlike SQLite's single writer,
	// takes in parallel.
	postgresShards = 16
	// The connection pools of docker-compose's Temporal (SQL_MAX_CONNS,
	// SQL_VIS_MAX_CONNS).
	postgresMaxConns           = 20
	postgresVisibilityMaxConns = 10
	// visibilitySuffix names the visibility database beside the main one:
	// Temporal's persistence and visibility schemas both keep a
	// schema_version table, so they cannot share a database.
	visibilitySuffix = "_visibility"
	// The schemas Temporal's own auto-setup applies, from the server
	// module's embedded files (go.temporal.io/server/schema).
	postgresSchema           = "postgresql/v12/temporal"
	postgresVisibilitySchema = "postgresql/v12/visibility"
)

// stores is where the server keeps its data: the default (executions,
// history, namespaces) and visibility stores, and the shard count the
// database was made with.
type stores struct {
	name                     string // the datastores' names in the server's config
	defaultStore, visibility *config.SQL
	shards                   int32
}

// postgresConfig is the Temporal SQL config of the database rawURL names,
// and the URL with the address Temporal dials (port and all). The URL's
// query parameters (sslmode, sslrootcert, …) go to the connection as they
// are.
func postgresConfig(rawURL string) (*config.SQL, *url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, errors.New("devserver: the database URL must be postgres://user:password@host:port/database")
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return nil, nil, errors.New("devserver: the database URL names no database (postgres://…/temporal)")
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if u.Port() == "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "5432")
	}
	conf := &config.SQL{
		PluginName:      postgresql.PluginNamePGX,
		DatabaseName:    name,
		ConnectAddr:     host,
		ConnectProtocol: "tcp",
		MaxConns:        postgresMaxConns,
		MaxIdleConns:    postgresMaxConns,
		MaxConnLifetime: time.Hour,
	}
	if u.User != nil {
		conf.User = u.User.Username()
		conf.Password, _ = u.User.Password()
	}
	if q := u.Query(); len(q) > 0 {
		conf.ConnectAttributes = make(map[string]string, len(q))
		for k := range q {
			conf.ConnectAttributes[k] = q.Get(k)
		}
	}
	u.Host = host
	return conf, u, nil
}

// preparePostgres creates the two databases when they are missing, sets up
// or upgrades their schemas (as Temporal's auto-setup does: the version
// tables, then every versioned step past the database's version, so a
// start on an existing database changes nothing), and registers the
// namespaces.
func preparePostgres(ctx context.Context, rawURL string, opts Options, logger tlog.Logger) (stores, error) {
	def, u, err := postgresConfig(rawURL)
	if err != nil {
		return stores{}, err
	}
	vis := *def
	vis.DatabaseName += visibilitySuffix
	vis.MaxConns, vis.MaxIdleConns = postgresVisibilityMaxConns, postgresVisibilityMaxConns
	for _, db := range []struct {
		conf   *config.SQL
		schema string
	}{{def, postgresSchema}, {&vis, postgresVisibilitySchema}} {
		u.Path = "/" + db.conf.DatabaseName
		if err := ensureDatabase(ctx, u); err != nil {
			return stores{}, fmt.Errorf("devserver: database %s: %w", db.conf.DatabaseName, err)
		}
		if err := migrate(*db.conf, db.schema, logger); err != nil {
			return stores{}, fmt.Errorf("devserver: database %s: %w", db.conf.DatabaseName, err)
		}
	}
	if err := createNamespaces(def, opts); err != nil {
		return stores{}, err
	}
	return stores{name: "postgres", defaultStore: def, visibility: &vis, shards: postgresShards}, nil
}

// ensureDatabase connects to the database u names and, when the server
// says there is none (invalid_catalog_name), creates it from the server's
// postgres database, which needs CREATEDB. pgx's errors name the user and
// database, never the password.
func ensureDatabase(ctx context.Context, u *url.URL) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err == nil {
		return conn.Close(ctx)
	}
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "3D000" /* invalid_catalog_name */ {
		return fmt.Errorf("connect: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin := *u
	admin.Path = "/postgres"
	conn, err = pgx.Connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("it does not exist, and to create it: connect: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if pe := (*pgconn.PgError)(nil); err != nil && (!errors.As(err, &pe) || pe.Code != "42P04" /* duplicate_database */) {
		return fmt.Errorf("it does not exist, and to create it: %w", err)
	}
	return nil
}

// migrate brings the schema of the database conf names to the newest
// version the server module carries.
func migrate(conf config.SQL, schemaName string, logger tlog.Logger) error {
	conn, err := tsql.NewConnection(&conf, logger)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return fmt.Errorf("schema version tables: %w", err)
	}
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: conf.DatabaseName, SchemaName: schemaName}, logger).Run(); err != nil {
		return fmt.Errorf("schema %s: %w", schemaName, err)
	}
	return nil
}

// createNamespaces registers opts' namespaces in the database conf names
// (a no-op for those that exist), as prepareSQLite does: directly, before
// the server starts, so the first run need not wait for the frontend's
// namespace cache to see a namespace registered through it.
func createNamespaces(conf *config.SQL, opts Options) error {
	nss := make([]*sqliteschema.NamespaceConfig, 0, len(opts.Namespaces))
	for _, ns := range opts.Namespaces {
		// Despite its package, NewNamespaceConfig and CreateNamespaces
		// work on any SQL store: they map the search attributes onto the
		// SQL visibility schema's columns and write through the generic
		// SQL persistence (schema/sqlite/setup.go:93-160 at v1.32.1).
		nc, err := sqliteschema.NewNamespaceConfig(clusterName, ns, false, opts.SearchAttributes)
		if err != nil {
			return fmt.Errorf("devserver: namespace %q: %w", ns, err)
		}
		nss = append(nss, nc)
	}
	if err := sqliteschema.CreateNamespaces(conf, nss...); err != nil {
		return fmt.Errorf("devserver: register namespaces: %w", err)
	}
	return nil
}
