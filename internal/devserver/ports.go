package devserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

type servicePorts struct {
	frontend, frontendHTTP, history, matching, worker int
}

func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// checkFree reports a clear error when addr cannot be bound.
func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("devserver: %s is not free: %w", addr, err)
	}
	return l.Close()
}

// freePorts picks n distinct free ports on host (see FreePort). The
// internal services (frontend HTTP, history, matching, worker) listen on
// them; they are chosen afresh at every start, so two instances with
// different frontend ports never collide, and nothing outside the process
// needs them.
func freePorts(host string, n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := listenFree(host)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort picks a free port on host for a server that binds it a moment
// later. It is not one the kernel hands out (port 0 or the source port of an
// outgoing connection take them from the ephemeral range), so nothing else
// takes it in the meantime; the Temporal server exits the process when a
// port it was given is taken.
func FreePort(host string) (int, error) {
	l, err := listenFree(host)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// handedOut are the ports listenFree gave this process. A port is free
// from the moment its listener closes until its user binds it; in that
// moment a second start in the same process (tests start many at once)
// could be handed the same port, and Temporal exits the process when a
// port it was given is taken. So no port is handed out twice.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// listenFree listens on a random free port of host below the kernel's
// ephemeral range that this process was not given before.
func listenFree(host string) (net.Listener, error) {
	low, high := pickRange()
	handedOut.Lock()
	defer handedOut.Unlock()
	var last error
	for range 100 {
		port := low + rand.IntN(high-low)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			handedOut.ports[port] = true
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("devserver: no free port in %d-%d: %w", low, high, last)
}

// pickRange is the port range FreePort picks from: from 10000 up to the
// start of the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range on
// Linux; 32768 elsewhere, or when that range starts too low to leave room).
func pickRange() (low, high int) {
	low, high = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if start, err := strconv.Atoi(f[0]); err == nil && start-low >= 5000 {
			high = start
		}
	}
	return low, high
}
