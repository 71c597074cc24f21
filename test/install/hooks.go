package install

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/test/harness"
)

// runPreDeleteHooks stands in for the kubelet for the addon's pre-delete hook Jobs on a
// spoke until ctx ends: each Job OCM applies is run once as a process (its container's
// arguments, the Job's ServiceAccount), retried up to its backoffLimit, and its status
// completed or failed as the job controller records its pod's end. The addon framework
// reads that status back through the ManifestWork.
func (p *Product) runPreDeleteHooks(ctx context.Context, spoke *harness.Spoke) {
	done := map[string]bool{}
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		jobs := &batchv1.JobList{}
		if err := spoke.Client.List(ctx, jobs); err != nil {
			return false, nil
		}
		for i := range jobs.Items {
			job := &jobs.Items[i]
			if _, hook := job.Annotations[addonv1beta1.AddonPreDeleteHookAnnotationKey]; !hook || done[string(job.UID)] {
				continue
			}
			done[string(job.UID)] = true
			go p.runJob(ctx, spoke, job)
		}
		return false, nil
	})
}

func (p *Product) runJob(ctx context.Context, spoke *harness.Spoke, job *batchv1.Job) {
	spec := job.Spec.Template.Spec
	kubeconfig, err := spoke.ServiceAccountKubeconfig(ctx, job.Namespace, spec.ServiceAccountName)
	if err != nil {
		_ = finishJob(ctx, spoke.Client, job, false, err.Error())
		return
	}
	args := append([]string{p.Binary}, replaceFlags(spec.Containers[0].Args, map[string]string{"--kubeconfig": kubeconfig})...)
	attempts := int32(1)
	if job.Spec.BackoffLimit != nil {
		attempts += *job.Spec.BackoffLimit
	}
	var exitErr error
	for range attempts {
		var proc *harness.Process
		proc, exitErr = p.Fleet.StartProcess(spoke.Name+"-"+job.Name, args)
		if exitErr != nil {
			break
		}
		if exitErr = proc.Wait(ctx); exitErr == nil {
			break
		}
	}
	if exitErr != nil {
		_ = finishJob(ctx, spoke.Client, job, false, exitErr.Error())
		return
	}
	_ = finishJob(ctx, spoke.Client, job, true, "")
}

// finishJob records a Job's end as the job controller does when its pod succeeded, or
// failed for good.
func finishJob(ctx context.Context, c client.Client, job *batchv1.Job, succeeded bool, message string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), current); err != nil {
			return err
		}
		now := metav1.Now()
		status := &current.Status
		if status.StartTime == nil {
			status.StartTime = &now
		}
		status.Active, status.Ready, status.Terminating = 0, new(int32), new(int32)
		status.UncountedTerminatedPods = nil
		conditions := []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed}
		if succeeded {
			status.CompletionTime = &now
			status.Succeeded = 1
			conditions = []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}
		} else {
			status.Failed = 1
		}
		for _, t := range conditions {
			status.Conditions = append(status.Conditions, batchv1.JobCondition{
				Type: t, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now,
				Reason: "ByTestKubelet", Message: message,
			})
		}
		if err := c.Status().Update(ctx, current); err != nil {
			return fmt.Errorf("recording the end of Job %s/%s: %w", job.Namespace, job.Name, err)
		}
		return nil
	})
}
