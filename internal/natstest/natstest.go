// Package natstest starts a real nats-server process for tests:
// JetStream on, a loopback port, a temporary store, and a process group that
// is always killed at cleanup. The binary is the one scripts/setup.sh
// builds from the server's Go module at Version.
package natstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the nats-server release scripts/setup.sh installs.
const Version = "v2.15.2"

// PathEnv overrides where the binary is looked up.
const PathEnv = "BROWSERCHAIN_NATS_SERVER"

// StartTimeout bounds how long Start waits for "Server is ready".
const StartTimeout = 30 * time.Second

// Path returns the nats-server binary: $BROWSERCHAIN_NATS_SERVER, else
// $HOME/.cache/browserchain/nats-server-<Version>/nats-server, else
// nats-server on PATH; "" when none exists.
func Path() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "browserchain", "nats-server-"+Version, "nats-server")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	return ""
}

// Server is a running broker process. Restart and Kill may be called from
// the test goroutine; the cleanup registered by Start stops it for good.
// Restart is for servers from Start only.
type Server struct {
	t        testing.TB
	bin      string
	port     int
	storeDir string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a broker with JetStream on a free loopback port and a store
// under t.TempDir(), and registers its stop with t.Cleanup. It fails the
// test (with the set-up hint) when the binary is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Kill)
	return s
}

// ErrNotInstalled is returned by Launch when no binary is found.
var ErrNotInstalled = errors.New("natstest: nats-server " + Version + " not found: run scripts/setup.sh or set " + PathEnv)

// Launch starts a broker outside a test (benchmarks, tools) with its store
// in storeDir; the caller must call Kill.
func Launch(storeDir string) (*Server, error) {
	bin := Path()
	if bin == "" {
		return nil, ErrNotInstalled
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s := &Server{bin: bin, port: port, storeDir: storeDir}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the client URL, nats://127.0.0.1:<port>.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.storeDir,
		"--http_port", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: start %s: %w", s.bin, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var tail []string
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled {
				tail = append(tail, line)
				if strings.Contains(line, "Server is ready") {
					signalled = true
					ready <- nil
				}
			}
		}
		if !signalled {
			ready <- errors.New("natstest: nats-server exited before ready: " + strings.Join(tail, "\n"))
		}
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			return err
		}
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return errors.New("natstest: nats-server not ready in time")
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

// Kill stops the broker abruptly (SIGKILL to its process group) and waits
// for it. Idempotent.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// Restart kills the broker and starts it again on the same port with the
// same store directory. It fails the test of Start on error.
func (s *Server) Restart() {
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}
