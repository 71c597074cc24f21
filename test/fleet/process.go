package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one program of the fleet, with its output kept in LogFile.
type Process struct {
	Name    string
	LogFile string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

// startProcess runs argv with its output in logFile. Pdeathsig kills it if the test
// binary dies, and its own process group lets Stop reach every child.
func startProcess(name, logFile string, argv []string, env []string) (*Process, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited tells whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group and SIGKILL after 10 s.
func (p *Process) Stop() error { return p.stop(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL at once, as an OOM kill or a node loss does.
func (p *Process) Kill() error { return p.stop(syscall.SIGKILL, 0) }

func (p *Process) stop(sig syscall.Signal, grace time.Duration) error {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return nil
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// failed wraps err with the process's log so a failure explains itself.
func (p *Process) failed(err error) error {
	if exited, exitErr := p.Exited(); exited {
		err = errors.Join(err, fmt.Errorf("%s exited: %v", p.Name, exitErr))
	}
	return fmt.Errorf("%w\n--- last lines of %s:\n%s", err, p.LogFile, indent(p.Tail(15)))
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
