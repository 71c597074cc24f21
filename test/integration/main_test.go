package integration

import (
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestMain shows controller errors in the test output, where a failing test needs them,
// and stops the shared hub (sharedHub) once every test has run.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code := m.Run()
	if runPackageCleanups() && code == 0 {
		code = 1
	}
	os.Exit(code)
}
