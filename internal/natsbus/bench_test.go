package natsbus_test

import (
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The measurement behind core NATS: BenchmarkDeltasCore publishes a call's
// text as deltas and a follower receives them; BenchmarkDeltasJetStream
// does the same through a memory-backed JetStream stream (what replay from
// the stream instead of a snapshot from the call would need). Compare ns/op
// (per delta) and allocs: `go test -run '^$' -bench Deltas ./internal/natsbus/`.

func BenchmarkDeltasCore(b *testing.B) {
	srv, err := natsbus.StartServer("")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown) // after the connections close
	pub := connect(b, srv)
	sub := connect(b, srv)
	bus := natsbus.New(pub, natsbus.NewSubjects("", "bench"), nil)
	follower := natsbus.New(sub, natsbus.NewSubjects("", "bench"), nil)
	got := make(chan struct{}, 1024)
	stop, err := follower.Follow("run-1", func(d longhaul.Delta) { got <- struct{}{} })
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	_ = sub.Flush()
	cs := bus.OpenCall("run-1", "turn-1", 1, 0)
	defer cs.Close()
	b.ResetTimer()
	for range b.N {
		cs.Write("token ")
		<-got
	}
}

func BenchmarkDeltasJetStream(b *testing.B) {
	opts := &server.Options{DontListen: true, JetStream: true, StoreDir: b.TempDir(), NoSigs: true, NoLog: true}
	ns, err := server.NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("not ready")
	}
	defer ns.Shutdown()
	pub, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	js, err := jetstream.New(pub)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DELTAS", Subjects: []string{"d.>"}, Storage: jetstream.MemoryStorage, MaxAge: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"d.run-1.>"}})
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan struct{}, 1024)
	cc, err := cons.Consume(func(m jetstream.Msg) { got <- struct{}{} })
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	data := []byte(`{"kind":"content","call":"turn-1","attempt":1,"after":0,"from":0,"text":"token "}`)
	b.ResetTimer()
	for range b.N {
		if _, err := js.PublishAsync("d.run-1.turn-1", data); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

func connect(b testing.TB, srv *natsbus.Server) *nats.Conn {
	nc, err := natsbus.Connect(natsbus.ClientOptions{InProcess: srv}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}
