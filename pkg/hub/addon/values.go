package addon

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/gitops-addon/gitops-addon/pkg/bounded"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// Names of the AddOnDeploymentConfig customizedVariables gitops-addon understands. Any
// other name is ignored with a Warning Event on the ManagedClusterAddOn, so that a typo
// never silently does nothing, and an ADC shared with another addon (or written for a
// newer gitops-addon) does not stop the stack from being delivered.
const (
	VarExtraAPIGroups      = "extraAPIGroups"
	VarGitOpsOperatorImage = "gitOpsOperatorImage"
	VarArgoCDImage         = "argoCDImage"
	VarRedisImage          = "redisImage"
	// VarArgoCDAgentImage is argocd-agent's image in Argo CD Agent mode.
	VarArgoCDAgentImage = "argoCDAgentImage"
	VarAgentLogLevel    = "agentLogLevel"
	// VarRouteCRDAdmissionGuard "false" leaves out the spoke's ValidatingAdmissionPolicy
	// against a duplicate Routes CRD (the agent still deletes a duplicate).
	VarRouteCRDAdmissionGuard = "routeCRDAdmissionGuard"
	// VarPlatformExtensionsForExisting names the existing ArgoCD in openshift-gitops, on a
	// cluster where gitops-addon uses it (existingArgoCD UseExisting), whose application
	// controller gets argocd-platform-extensions too: an opt-in.
	VarPlatformExtensionsForExisting = "platformExtensionsForExistingArgoCD"
)

var knownVariables = []string{
	VarAgentLogLevel, VarArgoCDAgentImage, VarArgoCDImage, VarExtraAPIGroups, VarGitOpsOperatorImage, VarPlatformExtensionsForExisting, VarRedisImage,
	VarRouteCRDAdmissionGuard,
}

// apiGroupPattern is a DNS subdomain, the form of every Kubernetes API group name.
var apiGroupPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

var logLevels = map[string]bool{"debug": true, "info": true, "error": true}

// knobs are the per-cluster settings resolved from every source, before rendering.
type knobs struct {
	extraAPIGroups []string
	operatorImage  string
	argoCDImage    string
	redisImage     string
	// argoCDAgentImage is argocd-agent's image, used in Argo CD Agent mode only.
	argoCDAgentImage string
	agentLogLevel    string
	// routeCRDAdmissionGuard is "true", "false" or "" (unset: the chart's default, true).
	routeCRDAdmissionGuard string
	// existingInstance is the existing ArgoCD whose controller gets argocd-platform-extensions.
	existingInstance string
	// proxy is Red Hat ACM's HTTP_PROXY, HTTPS_PROXY and NO_PROXY variables; what the ADC's
	// spec.proxyConfig sets wins, variable by variable.
	proxy map[string]string
}

// parseCustomizedVariables reads our customizedVariables and Red Hat ACM's (ours win
// where both say the same thing), with an error naming the bad value and what it accepts;
// it returns the names it does not know and what of ACM's it does not carry out.
func parseCustomizedVariables(vars []addonv1beta1.CustomizedVariable) (knobs, []string, []string, error) {
	seen := make(map[string]bool, len(vars))
	for _, v := range vars {
		// The API declares the list a map keyed by name, so the apiserver refuses a name
		// given twice; a client that bypassed it gets no silent "last one wins".
		if seen[v.Name] {
			return knobs{}, nil, nil, fmt.Errorf("customizedVariable %s is set more than once; keep one", v.Name)
		}
		seen[v.Name] = true
		if bounded.Printable(v.Value) != v.Value {
			return knobs{}, nil, nil, fmt.Errorf("customizedVariable %s=%q is not printable text (UTF-8 without control characters)", v.Name, v.Value)
		}
	}
	acm := translateACMVariables(vars)
	if acm.err != nil {
		return knobs{}, nil, nil, acm.err
	}
	k := knobs{proxy: acm.proxy}
	unknown, err := parseOurVariables(&k, append(acm.ours, acm.others...))
	return k, unknown, acm.warnings, err
}

// whiteSpace is what no image or name variable may contain.
const whiteSpace = " \t\n"

// parseOurVariables reads our customizedVariables into k; later ones win.
func parseOurVariables(k *knobs, vars []addonv1beta1.CustomizedVariable) ([]string, error) {
	var unknown []string
	for _, v := range vars {
		value := strings.TrimSpace(v.Value)
		switch v.Name {
		case VarExtraAPIGroups:
			groups, err := parseAPIGroups(value)
			if err != nil {
				return nil, err
			}
			k.extraAPIGroups = groups
		case VarGitOpsOperatorImage:
			k.operatorImage = value
		case VarArgoCDImage:
			k.argoCDImage = value
		case VarRedisImage:
			k.redisImage = value
		case VarArgoCDAgentImage:
			k.argoCDAgentImage = value
		case VarAgentLogLevel:
			if !logLevels[value] {
				return nil, fmt.Errorf("customizedVariable %s=%q: want one of debug, info, error", VarAgentLogLevel, value)
			}
			k.agentLogLevel = value
		case VarRouteCRDAdmissionGuard:
			if value != "true" && value != "false" {
				return nil, fmt.Errorf("customizedVariable %s=%q: want true or false", VarRouteCRDAdmissionGuard, value)
			}
			k.routeCRDAdmissionGuard = value
		case VarPlatformExtensionsForExisting:
			// The operator names the controller's ServiceAccount <name>-argocd-application-controller.
			if errs := validation.IsDNS1123Subdomain(value + "-argocd-application-controller"); value != "" && len(errs) > 0 {
				return nil, fmt.Errorf("customizedVariable %s=%q: want the name of an ArgoCD in openshift-gitops (%s)", VarPlatformExtensionsForExisting, value,
					strings.Join(errs, "; "))
			}
			k.existingInstance = value
		default:
			unknown = append(unknown, v.Name)
			continue
		}
		if strings.ContainsAny(value, whiteSpace) && v.Name != VarExtraAPIGroups {
			return nil, fmt.Errorf("customizedVariable %s=%q must not contain white space", v.Name, value)
		}
	}
	return unknown, nil
}

// parseAPIGroups reads a comma-separated list of API group names.
func parseAPIGroups(value string) ([]string, error) {
	seen := map[string]bool{}
	var groups []string
	for _, g := range strings.Split(value, ",") {
		g = strings.TrimSpace(g)
		if g == "" || seen[g] {
			continue
		}
		if len(g) > 253 || !apiGroupPattern.MatchString(g) {
			return nil, fmt.Errorf("customizedVariable %s: %q is not an API group name (a DNS subdomain such as cert-manager.io)", VarExtraAPIGroups, g)
		}
		seen[g] = true
		groups = append(groups, g)
	}
	sort.Strings(groups)
	return groups, nil
}

// valuesSources are the inputs of the per-cluster values beyond the cluster and addon.
type valuesSources struct {
	adcGetter     utils.AddOnDeploymentConfigGetter
	operatorImage string // manager-wide override (--operator-image)
	warn          Warner // nil: warnings are dropped (render)
}

// values computes the chart values gitops-addon decides per cluster: flavour (which the
// agent also reads before it installs a Routes CRD), images and our customizedVariables.
// Precedence for images, lowest first: chart default for the flavour, the manager's
// --operator-image, the AddOnDeploymentConfig's customizedVariables, the GitOpsCluster's
// spec.gitopsAddon; then the ADC's registries and the cluster's image-registries
// annotation mirror the final image.
func (s valuesSources) values(mc *clusterv1.ManagedCluster, addon *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
	adc, err := s.desiredConfig(addon)
	if err != nil {
		return nil, err
	}
	k := knobs{operatorImage: s.operatorImage}
	var registries []addonv1beta1.ImageMirror
	if adc != nil {
		fromADC, unknown, notCarried, err := parseCustomizedVariables(adc.Spec.CustomizedVariables)
		if err != nil {
			return nil, fmt.Errorf("AddOnDeploymentConfig %s/%s: %w", adc.Namespace, adc.Name, err)
		}
		s.warnIgnored(addon, adc, unknown, notCarried)
		k = overlay(k, fromADC)
		registries = adc.Spec.Registries
	}
	k = overlay(k, fromAnnotations(addon))
	mirror := mirrorFunc(mc, registries)
	values := buildValues(clusterFlavour(mc), k, mirror)
	values["stack"] = StackOf(addon)
	if agent := argoCDAgentValues(addon); agent != nil {
		if image := mirror(k.argoCDAgentImage); image != "" {
			agent["image"] = image
		}
		values["argoCDAgent"] = agent
	}
	if reader := contract.SettingsOf(addonAnnotations(addon)).LiveResourcesReader; !reader.IsZero() {
		values["liveResources"] = map[string]any{"reader": map[string]any{"namespace": reader.Namespace, "name": reader.Name}}
	}
	return values, nil
}

// addonAnnotations are the ManagedClusterAddOn's annotations, none for no addon.
func addonAnnotations(addon *addonv1beta1.ManagedClusterAddOn) map[string]string {
	if addon == nil {
		return nil
	}
	return addon.Annotations
}

// warnIgnored names the customizedVariables of the AddOnDeploymentConfig that were
// ignored, and what gitops-addon understands (empty: nothing was ignored).
func (s valuesSources) warnIgnored(addon *addonv1beta1.ManagedClusterAddOn, adc *addonv1beta1.AddOnDeploymentConfig, unknown, notCarried []string) {
	if s.warn == nil || addon == nil {
		return
	}
	var parts []string
	if len(unknown) > 0 {
		parts = append(parts, fmt.Sprintf("ignored customizedVariables %s, which gitops-addon does not know; it understands %s and Red Hat ACM's "+
			"gitops-addon-config variables (names are case-sensitive)",
			strings.Join(unknown, ", "), strings.Join(knownVariables, ", ")))
	}
	parts = append(parts, notCarried...)
	message := ""
	if len(parts) > 0 {
		message = fmt.Sprintf("AddOnDeploymentConfig %s/%s: %s", adc.Namespace, adc.Name, strings.Join(parts, "; "))
	}
	s.warn(addon, message)
}

func (s valuesSources) desiredConfig(addon *addonv1beta1.ManagedClusterAddOn) (*addonv1beta1.AddOnDeploymentConfig, error) {
	if addon == nil || s.adcGetter == nil {
		return nil, nil
	}
	adc, err := utils.GetDesiredAddOnDeploymentConfig(addon, s.adcGetter)
	if err != nil {
		return nil, fmt.Errorf("reading the AddOnDeploymentConfig of %s/%s: %w", addon.Namespace, addon.Name, err)
	}
	return adc, nil
}

// fromAnnotations reads the images a GitOpsCluster set on its ManagedClusterAddOn.
func fromAnnotations(addon *addonv1beta1.ManagedClusterAddOn) knobs {
	if addon == nil {
		return knobs{}
	}
	images := contract.SettingsOf(addon.Annotations).Images
	return knobs{
		operatorImage:    images.Operator,
		argoCDImage:      images.ArgoCD,
		redisImage:       images.Redis,
		argoCDAgentImage: images.ArgoCDAgent,
	}
}

// argoCDAgentValues are the agent chart's argoCDAgent values of a cluster in Argo CD
// Agent mode, from what its GitOpsCluster wrote on the ManagedClusterAddOn; nil outside
// agent mode.
func argoCDAgentValues(addon *addonv1beta1.ManagedClusterAddOn) map[string]any {
	if addon == nil {
		return nil
	}
	agent := contract.SettingsOf(addon.Annotations).ArgoCDAgent
	if agent == nil {
		return nil
	}
	values := map[string]any{"mode": agent.Mode, "caCertificate": agent.PrincipalCA}
	if host, port, ok := agent.PrincipalHostPort(); ok {
		values["principalAddress"], values["principalPort"] = host, port
	}
	return values
}

// overlay returns base with every setting of top that is set.
func overlay(base, top knobs) knobs {
	if top.extraAPIGroups != nil {
		base.extraAPIGroups = top.extraAPIGroups
	}
	if top.proxy != nil {
		base.proxy = top.proxy
	}
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&base.operatorImage, top.operatorImage},
		{&base.argoCDImage, top.argoCDImage},
		{&base.redisImage, top.redisImage},
		{&base.argoCDAgentImage, top.argoCDAgentImage},
		{&base.agentLogLevel, top.agentLogLevel},
		{&base.routeCRDAdmissionGuard, top.routeCRDAdmissionGuard},
		{&base.existingInstance, top.existingInstance},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	return base
}

// mirrorFunc applies image mirrors: the ADC's registries first, else the cluster's
// open-cluster-management.io/image-registries annotation, as addon-framework does for the
// agent image.
func mirrorFunc(mc *clusterv1.ManagedCluster, registries []addonv1beta1.ImageMirror) func(string) string {
	if len(registries) == 0 && mc != nil {
		registries = clusterAnnotationRegistries(mc)
	}
	return func(image string) string {
		if image == "" || len(registries) == 0 {
			return image
		}
		return addonfactory.OverrideImage(registries, image)
	}
}

// buildValues lays the decisions out as chart values (plain JSON types only: the Helm
// engine of addon-framework v1.3.0 does not normalise typed maps).
func buildValues(f flavour, k knobs, mirror func(string) string) addonfactory.Values {
	groups := make([]any, 0, len(k.extraAPIGroups))
	for _, g := range k.extraAPIGroups {
		groups = append(groups, g)
	}
	argoCDImage, redisImage := mirror(k.argoCDImage), mirror(k.redisImage)
	if defaults, err := chartDefaults(); err == nil {
		if argoCDImage == "" {
			argoCDImage = mirroredDefault(defaults.ArgoCD.DefaultImage, mirror)
		}
		if redisImage == "" {
			redisImage = mirroredDefault(defaults.ArgoCD.DefaultRedisImage, mirror)
		}
	}
	values := addonfactory.Values{
		"openshift":          f.openShift,
		"platformExtensions": map[string]any{"extraAPIGroups": groups, "existingInstance": k.existingInstance},
		"argoCD": map[string]any{
			"image":      argoCDImage,
			"redisImage": redisImage,
		},
	}
	agent := map[string]any{}
	if k.agentLogLevel != "" {
		agent["logLevel"] = k.agentLogLevel
	}
	if k.routeCRDAdmissionGuard != "" {
		agent["routeCRDAdmissionGuard"] = k.routeCRDAdmissionGuard == "true"
	}
	if len(agent) > 0 {
		values["agent"] = agent
	}
	operator := k.operatorImage
	if operator == "" {
		operator = defaultOperatorImage(f)
	}
	global := map[string]any{}
	if operator != "" {
		global["imageOverrides"] = map[string]any{"gitopsOperator": mirror(operator)}
	}
	if len(k.proxy) > 0 {
		proxy := map[string]any{}
		for name, value := range k.proxy {
			proxy[name] = value
		}
		global["proxyConfig"] = proxy
	}
	if len(global) > 0 {
		values["global"] = global
	}
	return values
}

// The chart's stack values (manifests/charts/gitops-addon-agent/values.yaml).
const (
	StackFull        = "full"
	StackAgentOnly   = "agentOnly"
	StackUseExisting = "useExisting"
)

// StackOf is what a cluster gets beside the agent, from what its agent reported
// (contract.ConditionExistingArgoCD) and the GitOpsCluster's choice: the GitOps operator
// and our ArgoCD only once the agent found no Argo CD and no GitOps operator of someone
// else there (False); the agent serving the existing instance when one runs there and
// the choice is UseExisting; else the agent alone, which finds out and reports. A
// cluster is never shipped an operator or an ArgoCD on a guess: until its agent has
// reported, it is agentOnly.
func StackOf(addon *addonv1beta1.ManagedClusterAddOn) string {
	if addon == nil {
		return StackAgentOnly
	}
	switch report := contract.ExistingArgoCDOf(addon.Status.Conditions); {
	case !report.Reported:
		return StackAgentOnly
	case !report.Found:
		return StackFull
	case contract.SettingsOf(addon.Annotations).ExistingArgoCD == contract.ExistingArgoCDUse:
		return StackUseExisting
	}
	return StackAgentOnly
}
