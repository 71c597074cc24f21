package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Stop tiers: Fleet.Stop ends tier 0 first and etcd last, so no kube-apiserver outlives
// etcd (it would hang retrying) and no client outlives its apiserver for long.
const (
	tierClient = iota // OCM components and processes started with StartProcess
	tierNode          // a real-pod node's containerd, kubelet, kube-proxy, CoreDNS and scheduler
	tierControllerManager
	tierAPIServer
	tierEtcd
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 15 * time.Second

// Process is one program of the fleet. Its output goes to LogFile (appended across
// restarts), it runs in its own process group (Stop and Kill reach its children too),
// and it receives SIGKILL if the program that started it dies first.
type Process struct {
	// Name names the process in logs and errors, e.g. "hub-kube-apiserver".
	Name string
	// LogFile holds its stdout and stderr.
	LogFile string

	args []string
	env  []string
	tier int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's result, valid once done is closed
}

func newProcess(name, logFile string, args, env []string, tier int) *Process {
	return &Process{Name: name, LogFile: logFile, args: args, env: env, tier: tier}
}

// Start starts the process again after Stop or Kill, with the same arguments and log.
// It fails if the process is running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log of %s: %w", p.Name, err)
	}
	fmt.Fprintf(out, "=== harness: %s starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), p.env...)
	// A process group of its own lets Stop signal every descendant; Pdeathsig kills the
	// process when the test binary or demo dies without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		_ = out.Close()
		return fmt.Errorf("starting %s (%s): %w", p.Name, p.args[0], err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.err = err
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Stop sends SIGTERM to the process group, then SIGKILL after a grace period, and
// returns once the process has exited. Stopping a stopped process does nothing.
func (p *Process) Stop() error { return p.terminate(syscall.SIGTERM, stopGrace) }

// Kill sends SIGKILL to the process group at once, as an OOM kill or a node loss would,
// and returns once the process has exited.
func (p *Process) Kill() error { return p.terminate(syscall.SIGKILL, 0) }

// Signal sends sig to the process group and returns at once: SIGSTOP freezes the process
// (a stalled node, a long pause), SIGCONT resumes it.
func (p *Process) Signal(sig syscall.Signal) error {
	pid := p.Pid()
	if pid == 0 {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("sending %v to %s (pid %d): %w", sig, p.Name, pid, err)
	}
	return nil
}

// Restart stops the process (SIGTERM) and starts it again.
func (p *Process) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.Start()
}

func (p *Process) terminate(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("%s (pid %d) survived SIGKILL for 30s", p.Name, pgid)
		}
	}
	// The leader is gone; anything it left in its group goes too.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing what is left of %s's process group: %w", p.Name, err)
	}
	return nil
}

// Pid is the process id of the latest start (0 if never started). It is also the
// process group id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running tells whether the process is running.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Exited tells whether the latest start has ended, and with which error (nil for exit
// status 0; an *exec.ExitError after a signal).
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false, nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits until the latest start has ended and returns its error (nil for exit status
// 0), or ctx's error first.
func (p *Process) Wait(ctx context.Context) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return fmt.Errorf("%s was never started", p.Name)
	}
	select {
	case <-done:
		_, err := p.Exited()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.LogFile, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// explain adds to err whether the process died and the end of its log, so that a
// failed wait says why without a second look.
func (p *Process) explain(err error) error {
	if exited, exitErr := p.Exited(); exited {
		err = fmt.Errorf("%w; %s exited: %v", err, p.Name, exitErr)
	}
	return fmt.Errorf("%w\n--- last lines of %s:\n%s", err, p.LogFile, indent(p.Tail(20)))
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// The parent-death signal fires when the *thread* that forked the child exits, not the
// process. Go may retire idle threads, so every child is forked from one goroutine locked
// to a thread that lives as long as the program.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not be retired
			for req := range spawner.reqs {
				req.errc <- req.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}
