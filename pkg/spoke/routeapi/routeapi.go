// Package routeapi reads how a cluster serves route.openshift.io/v1 (natively by
// openshift-apiserver's APIService, by a routes CRD, or not at all) and which CRDs
// duplicate an API an aggregated APIService serves: the facts the Route API guard
// (pkg/spoke/routeguard), the CRD installer (pkg/spoke/crdinstall) and `gitops-addon
// doctor` (pkg/doctor) decide on.
package routeapi

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Facts are what the classification reads from a cluster.
type Facts struct {
	APIServices []apiregistrationv1.APIService
	CRDs        []apiextensionsv1.CustomResourceDefinition
}

// ReadFacts lists APIServices and CRDs. Any error is returned: a caller must then
// classify Unknown and take no decision.
func ReadFacts(ctx context.Context, r client.Reader) (Facts, error) {
	var f Facts
	apiServices := &apiregistrationv1.APIServiceList{}
	if err := r.List(ctx, apiServices); err != nil {
		return f, fmt.Errorf("listing APIServices: %w", err)
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := r.List(ctx, crds); err != nil {
		return f, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	f.APIServices, f.CRDs = apiServices.Items, crds.Items
	return f, nil
}

// Classification is how a cluster serves route.openshift.io/v1.
type Classification struct {
	// Reason is one of contract.RouteAPINative, RouteAPICRD, RouteAPIAbsent, RouteAPIUnknown.
	Reason string
	// Message explains it.
	Message string
	// RoutesCRD is the routes.route.openshift.io CRD when it exists.
	RoutesCRD *apiextensionsv1.CustomResourceDefinition
	// NativeAPIService is the service-backed APIService when there is one.
	NativeAPIService *apiregistrationv1.APIService
}

// Classify decides Native, CRD, Absent, or Unknown when the facts could not be read.
// An APIService is native only when it is backed by a service: the apiserver creates a
// local APIService (no spec.service) for every CRD group/version, and that one is the
// CRD, not openshift-apiserver. A registered native APIService counts whether or not it
// is Available at the moment: an unavailable openshift-apiserver is still native.
func Classify(f Facts, readErr error) Classification {
	if readErr != nil {
		return Classification{Reason: contract.RouteAPIUnknown, Message: "Cannot read the cluster's APIServices and CRDs: " + readErr.Error()}
	}
	c := Classification{NativeAPIService: serviceBackedAPIService(f.APIServices, contract.RouteGroup, contract.RouteVersion)}
	for i := range f.CRDs {
		if f.CRDs[i].Name == contract.RoutesCRDName {
			c.RoutesCRD = &f.CRDs[i]
		}
	}
	switch {
	case c.NativeAPIService != nil:
		c.Reason = contract.RouteAPINative
		c.Message = fmt.Sprintf("route.openshift.io/v1 is served by APIService %s (service %s/%s).",
			c.NativeAPIService.Name, c.NativeAPIService.Spec.Service.Namespace, c.NativeAPIService.Spec.Service.Name)
		if unavailable := unavailableBecause(c.NativeAPIService); unavailable != "" {
			// Still native: the guard stays, and Routes come back with the service.
			c.Message += " It is not Available at the moment (" + unavailable + "); a Routes CRD must still never be installed."
		}
	case c.RoutesCRD != nil:
		c.Reason = contract.RouteAPICRD
		c.Message = "route.openshift.io/v1 is served by the CustomResourceDefinition " + contract.RoutesCRDName + "."
	default:
		c.Reason = contract.RouteAPIAbsent
		c.Message = "The cluster serves no route.openshift.io/v1 API."
	}
	return c
}

// unavailableBecause is the reason and message of an APIService that is not Available,
// "" when it is.
func unavailableBecause(s *apiregistrationv1.APIService) string {
	for _, c := range s.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			if c.Status == apiregistrationv1.ConditionTrue {
				return ""
			}
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return "no Available condition yet"
}

func serviceBackedAPIService(apiServices []apiregistrationv1.APIService, group, version string) *apiregistrationv1.APIService {
	for i := range apiServices {
		s := &apiServices[i]
		if s.Spec.Group == group && s.Spec.Version == version && s.Spec.Service != nil {
			return s
		}
	}
	return nil
}

// Duplicate is one API surface declared twice: a CRD's group/version that a
// service-backed APIService also serves.
type Duplicate struct {
	CRD        string
	Group      string
	Version    string
	APIService string
	Service    string
}

func (d Duplicate) String() string {
	return fmt.Sprintf("CRD %s duplicates %s/%s served by APIService %s (service %s)", d.CRD, d.Group, d.Version, d.APIService, d.Service)
}

// DuplicateSurfaces lists every CRD group/version also served by a service-backed
// APIService: each one breaks the merged /openapi/v2. This structural check is the
// primary signal, because a running apiserver keeps answering /openapi/v2 with a frozen,
// last-good document.
func DuplicateSurfaces(f Facts) []Duplicate {
	var out []Duplicate
	for _, crd := range f.CRDs {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			s := serviceBackedAPIService(f.APIServices, crd.Spec.Group, v.Name)
			if s == nil {
				continue
			}
			out = append(out, Duplicate{
				CRD: crd.Name, Group: crd.Spec.Group, Version: v.Name, APIService: s.Name,
				Service: s.Spec.Service.Namespace + "/" + s.Spec.Service.Name,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ServedCRDGroupVersions lists "group/version" of every served CRD version.
func ServedCRDGroupVersions(f Facts) []string {
	seen := map[string]bool{}
	var out []string
	for _, crd := range f.CRDs {
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			if v.Served && !seen[gv] {
				seen[gv] = true
				out = append(out, gv)
			}
		}
	}
	sort.Strings(out)
	return out
}

func DescribeDuplicates(dups []Duplicate) string {
	parts := make([]string, 0, len(dups))
	for _, d := range dups {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "; ")
}
