// The Go peer of the benchmark: the validating webhook's update decision (src/rules/table.ts)
// written on Trainer's typed API (github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1) and
// served by controller-runtime's webhook server and admission.Handler, the way a Go webhook
// for TrainJobs would be written. It exists to measure our Node webhook against; the bench
// checks that both decide the same on every body before any load.
//
// What the typed API cannot see, it does not judge: fields of spec.trainer that Trainer's Go
// type does not know (decoding drops them), the difference between an absent and an empty list,
// and quantities (Semantic.DeepEqual compares "1" and "1000m" as equal; CEL compares values).
//
//	trainjob-webhook-bench-peer --port N --cert tls.crt --key tls.key
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const validatePath = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"

const (
	immutable         = "field is immutable"
	msgNotAfterEnd    = "numNodes may not change once the TrainJob has finished (condition Complete, or Failed with reason DeadlineExceeded): Trainer never reconciles it again, so no JobSet would run with the new count; create a new TrainJob to train again"
	msgWhileSuspend   = "numNodes may only change while the TrainJob is suspended: set spec.suspend to true first (or in the same update), then change numNodes"
	msgNotNegative    = "numNodes may only change to 0 or more (0 makes the job complete at once), or be removed to use the runtime's default"
	msgPatchesSuspend = "runtimePatches may only change while the TrainJob is suspended"
)

type validator struct{ decoder admission.Decoder }

func (v *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	var obj trainer.TrainJob
	if err := v.decoder.DecodeRaw(req.Object, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var old trainer.TrainJob
	if err := v.decoder.DecodeRaw(req.OldObject, &old); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	errs := validateUpdate(&obj, &old)
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	return denied(obj.Name, errs)
}

// denied builds the Status like the API server (NewInvalid, or NewForbidden when every cause is
// Forbidden), with every violated rule as a cause, as our webhook does.
func denied(name string, errs field.ErrorList) admission.Response {
	var status metav1.Status
	allForbidden := true
	for _, e := range errs {
		allForbidden = allForbidden && e.Type == field.ErrorTypeForbidden
	}
	if allForbidden {
		status = apierrors.NewForbidden(trainer.GroupVersion.WithResource("trainjobs").GroupResource(), name, errs.ToAggregate()).ErrStatus
		status.Details.Causes = causes(errs)
	} else {
		status = apierrors.NewInvalid(trainer.GroupVersion.WithKind("TrainJob").GroupKind(), name, errs).ErrStatus
	}
	resp := admission.ValidationResponse(false, "")
	resp.Result = &status
	return resp
}

func causes(errs field.ErrorList) []metav1.StatusCause {
	out := make([]metav1.StatusCause, 0, len(errs))
	for _, e := range errs {
		out = append(out, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	return out
}

// validateUpdate: the rule table's rows, in its order.
func validateUpdate(obj, old *trainer.TrainJob) field.ErrorList {
	var errs field.ErrorList
	spec, oldSpec := &obj.Spec, &old.Spec
	tr, oldTr := spec.Trainer, oldSpec.Trainer
	if tr == nil {
		tr = &trainer.Trainer{}
	}
	if oldTr == nil {
		oldTr = &trainer.Trainer{}
	}
	p := field.NewPath("spec", "trainer")
	if !samePtr(tr.Image, oldTr.Image) {
		errs = append(errs, field.Invalid(p.Child("image"), deref(tr.Image), immutable))
	}
	if !sameList(tr.Command, oldTr.Command) {
		errs = append(errs, field.Invalid(p.Child("command"), tr.Command, immutable))
	}
	if !sameList(tr.Args, oldTr.Args) {
		errs = append(errs, field.Invalid(p.Child("args"), tr.Args, immutable))
	}
	if !sameEnv(tr.Env, oldTr.Env) {
		errs = append(errs, field.Invalid(p.Child("env"), tr.Env, immutable))
	}
	if !samePtr(tr.ResourcesPerNode, oldTr.ResourcesPerNode) {
		errs = append(errs, field.Invalid(p.Child("resourcesPerNode"), tr.ResourcesPerNode, immutable))
	}
	if !samePtr(tr.NumProcPerNode, oldTr.NumProcPerNode) {
		errs = append(errs, field.Invalid(p.Child("numProcPerNode"), deref(tr.NumProcPerNode), immutable))
	}
	if !samePtr(tr.NumNodes, oldTr.NumNodes) {
		nn := p.Child("numNodes")
		if finishedForGood(old) {
			errs = append(errs, field.Forbidden(nn, msgNotAfterEnd))
		}
		if !suspended(spec) && !suspended(oldSpec) {
			errs = append(errs, field.Forbidden(nn, msgWhileSuspend))
		}
		if tr.NumNodes != nil && *tr.NumNodes < 0 {
			errs = append(errs, field.Invalid(nn, *tr.NumNodes, msgNotNegative))
		}
	}
	// Upstream's transition rules: judged only when the field is there on both sides.
	if !equality.Semantic.DeepEqual(spec.RuntimeRef, oldSpec.RuntimeRef) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "runtimeRef"), spec.RuntimeRef, immutable))
	}
	if spec.Initializer != nil && oldSpec.Initializer != nil && !equality.Semantic.DeepEqual(spec.Initializer, oldSpec.Initializer) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "initializer"), spec.Initializer, immutable))
	}
	if spec.ManagedBy != nil && oldSpec.ManagedBy != nil && *spec.ManagedBy != *oldSpec.ManagedBy {
		errs = append(errs, field.Invalid(field.NewPath("spec", "managedBy"), *spec.ManagedBy, immutable))
	}
	if spec.ActiveDeadlineSeconds != 0 && oldSpec.ActiveDeadlineSeconds != 0 && spec.ActiveDeadlineSeconds != oldSpec.ActiveDeadlineSeconds {
		errs = append(errs, field.Invalid(field.NewPath("spec", "activeDeadlineSeconds"), spec.ActiveDeadlineSeconds, immutable))
	}
	if !sameRuntimePatches(spec.RuntimePatches, oldSpec.RuntimePatches) && !suspended(spec) && !suspended(oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "runtimePatches"), msgPatchesSuspend))
	}
	return errs
}

func suspended(s *trainer.TrainJobSpec) bool { return s.Suspend != nil && *s.Suspend }

// finishedForGood: Complete, or Failed with reason DeadlineExceeded (Trainer never reconciles it again).
func finishedForGood(tj *trainer.TrainJob) bool {
	for _, c := range tj.Status.Conditions {
		if c.Status == metav1.ConditionTrue && (c.Type == trainer.TrainJobComplete || (c.Type == trainer.TrainJobFailed && c.Reason == "DeadlineExceeded")) {
			return true
		}
	}
	return false
}

// samePtr: absent on both sides, or present on both with equal values (adding and removing are changes).
func samePtr[T any](a, b *T) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || equality.Semantic.DeepEqual(*a, *b)
}

func sameList[T comparable](a, b []T) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameEnv: env is a list-type map keyed by name, so order does not count.
func sameEnv(a, b []corev1.EnvVar) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	byName := make(map[string]*corev1.EnvVar, len(b))
	for i := range b {
		byName[b[i].Name] = &b[i]
	}
	for i := range a {
		o, ok := byName[a[i].Name]
		if !ok || !equality.Semantic.DeepEqual(a[i], *o) {
			return false
		}
	}
	return true
}

// sameRuntimePatches: a list-type map keyed by manager.
func sameRuntimePatches(a, b []trainer.RuntimePatch) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	byManager := make(map[string]*trainer.RuntimePatch, len(b))
	for i := range b {
		byManager[b[i].Manager] = &b[i]
	}
	for i := range a {
		o, ok := byManager[a[i].Manager]
		if !ok || !equality.Semantic.DeepEqual(a[i], *o) {
			return false
		}
	}
	return true
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func main() {
	port := flag.Int("port", 0, "HTTPS port on 127.0.0.1")
	certFile := flag.String("cert", "", "serving certificate (PEM)")
	keyFile := flag.String("key", "", "serving key (PEM)")
	flag.Parse()
	if *port <= 0 || *certFile == "" || *keyFile == "" {
		fmt.Fprintln(os.Stderr, "usage: trainjob-webhook-bench-peer --port N --cert FILE --key FILE")
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server := webhook.NewServer(webhook.Options{
		Host: "127.0.0.1",
		Port: *port,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
		}},
	})
	server.Register(validatePath, &webhook.Admission{Handler: &validator{decoder: admission.NewDecoder(scheme)}})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- server.Start(ctx) }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-done:
			fmt.Fprintln(os.Stderr, "webhook server:", err)
			os.Exit(1)
		default:
		}
		if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "webhook server did not start listening")
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("https://%s\n", addr)
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
