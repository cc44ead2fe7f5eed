package rules

import (
	"net"
	"regexp"
	"strconv"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// The rules in this file are the ones Kubernetes and Cluster API apply to the
// fields a topology or class passes on to generated objects. Checking them at
// admission keeps a bad value from being admitted and then failing every
// reconcile against the API server.

// validateMetadata checks labels and annotations as the API server checks them
// on any object: qualified keys, label values, total annotation size.
func validateMetadata(m v1alpha2.ObjectMeta, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(m.Labels, p.Child("labels"))
	return append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
}

// validateObjectName checks the name a Topology gives its Cluster: Cluster API
// uses it as the value of the cluster-name label on every object.
func validateObjectName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(name) {
		errs = append(errs, field.Invalid(p, name, "must be a valid label value, as Cluster API labels every object with it: "+msg))
	}
	return errs
}

// validateClusterNetwork checks CIDR blocks, the API server port and the
// service domain, as Cluster API's Cluster webhook and the CRD do.
func validateClusterNetwork(n *v1alpha2.ClusterNetwork, p *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	var errs field.ErrorList
	if port := n.APIServerPort; port != nil {
		for _, msg := range validation.IsValidPortNum(int(*port)) {
			errs = append(errs, field.Invalid(p.Child("apiServerPort"), *port, msg))
		}
	}
	if n.Services != nil {
		errs = append(errs, validateCIDRBlocks(n.Services.CIDRBlocks, p.Child("services", "cidrBlocks"))...)
	}
	if n.Pods != nil {
		errs = append(errs, validateCIDRBlocks(n.Pods.CIDRBlocks, p.Child("pods", "cidrBlocks"))...)
	}
	if d := n.ServiceDomain; d != "" {
		for _, msg := range validation.IsDNS1123Subdomain(d) {
			errs = append(errs, field.Invalid(p.Child("serviceDomain"), d, msg))
		}
	}
	return errs
}

func validateCIDRBlocks(cidrs []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cidrs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), c, "must be a CIDR block such as 192.168.0.0/16 or fd00::/48"))
		}
	}
	if len(cidrs) > 2 {
		errs = append(errs, field.TooMany(p, len(cidrs), 2))
	}
	return errs
}

// validateIntOrPercent checks a value that is a non-negative integer or a
// percentage such as "30%", as Cluster API reads maxUnhealthy, maxSurge,
// maxUnavailable and maxInFlight.
func validateIntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String && !percentRE.MatchString(v.StrVal) {
		return field.ErrorList{field.Invalid(p, v.StrVal, `must be an integer or a percentage such as "40%"`)}
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v.String(), err.Error())}
	}
	if n < 0 {
		return field.ErrorList{field.Invalid(p, v.String(), "must not be negative")}
	}
	return nil
}

var (
	percentRE        = regexp.MustCompile(`^[0-9]+%$`)
	unhealthyRangeRE = regexp.MustCompile(`^\[([0-9]+)-([0-9]+)\]$`)
)

// minNodeStartupTimeoutSeconds is the shortest nodeStartupTimeoutSeconds
// Cluster API accepts (0 disables the check).
const minNodeStartupTimeoutSeconds = 30

// validateHealthCheck checks a health check's checks and trigger as Cluster
// API's MachineHealthCheck webhook does.
func validateHealthCheck(c v1alpha2.HealthCheckChecks, t v1alpha2.HealthCheckTriggerIf, p *field.Path) field.ErrorList {
	tp := p.Child("remediation", "triggerIf")
	errs := validateIntOrPercent(t.UnhealthyLessThanOrEqualTo, tp.Child("unhealthyLessThanOrEqualTo"))
	if r := t.UnhealthyInRange; r != "" {
		errs = append(errs, validateUnhealthyRange(r, tp.Child("unhealthyInRange"))...)
	}
	cp := p.Child("checks")
	if s := c.NodeStartupTimeoutSeconds; s != nil && *s != 0 && *s < minNodeStartupTimeoutSeconds {
		errs = append(errs, field.Invalid(cp.Child("nodeStartupTimeoutSeconds"), *s, "must be at least 30, or 0 to disable the check"))
	}
	for i, u := range c.UnhealthyNodeConditions {
		up := cp.Child("unhealthyNodeConditions").Index(i)
		if u.Type == "" {
			errs = append(errs, field.Required(up.Child("type"), "name the Node condition"))
		}
		errs = append(errs, validateConditionStatus(string(u.Status), up.Child("status"))...)
		errs = append(errs, validateSeconds(u.TimeoutSeconds, up.Child("timeoutSeconds"))...)
	}
	for i, u := range c.UnhealthyMachineConditions {
		up := cp.Child("unhealthyMachineConditions").Index(i)
		switch u.Type {
		case "":
			errs = append(errs, field.Required(up.Child("type"), "name the Machine condition"))
		case "Ready", "Available", "HealthCheckSucceeded", "OwnerRemediated":
			errs = append(errs, field.Invalid(up.Child("type"), u.Type, "the health check sets or reads this condition itself: name another Machine condition"))
		}
		errs = append(errs, validateConditionStatus(string(u.Status), up.Child("status"))...)
		errs = append(errs, validateSeconds(u.TimeoutSeconds, up.Child("timeoutSeconds"))...)
	}
	return errs
}

func validateConditionStatus(s string, p *field.Path) field.ErrorList {
	switch s {
	case "True", "False", "Unknown":
		return nil
	}
	return field.ErrorList{field.NotSupported(p, s, []string{"True", "False", "Unknown"})}
}

func validateUnhealthyRange(r string, p *field.Path) field.ErrorList {
	match := unhealthyRangeRE.FindStringSubmatch(r)
	if match == nil {
		return field.ErrorList{field.Invalid(p, r, `must be a range such as "[3-5]"`)}
	}
	lo, err1 := strconv.Atoi(match[1])
	hi, err2 := strconv.Atoi(match[2])
	if err1 != nil || err2 != nil || lo > hi {
		return field.ErrorList{field.Invalid(p, r, "must be a range whose lower bound does not exceed its upper bound")}
	}
	return nil
}

// validateStrategy checks a MachineDeployment rollout strategy.
func validateStrategy(s v1alpha2.MachineDeploymentRolloutStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case "", "RollingUpdate", "OnDelete":
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, []string{"RollingUpdate", "OnDelete"}))
	}
	rp := p.Child("rollingUpdate")
	errs = append(errs, validateIntOrPercent(s.RollingUpdate.MaxSurge, rp.Child("maxSurge"))...)
	return append(errs, validateIntOrPercent(s.RollingUpdate.MaxUnavailable, rp.Child("maxUnavailable"))...)
}

// validateSeconds refuses negative seconds; the CRD's minimum refuses them
// before the webhooks see a stored object, not a file planned offline.
func validateSeconds(s *int32, p *field.Path) field.ErrorList {
	if s != nil && *s < 0 {
		return field.ErrorList{field.Invalid(p, *s, "must not be negative")}
	}
	return nil
}

// validateDeletion checks the node drain, volume detach and deletion timeouts
// a part sets, under p.
func validateDeletion(d v1alpha2.MachineDeletion, p *field.Path) field.ErrorList {
	errs := validateSeconds(d.NodeDrainTimeoutSeconds, p.Child("nodeDrainTimeoutSeconds"))
	errs = append(errs, validateSeconds(d.NodeVolumeDetachTimeoutSeconds, p.Child("nodeVolumeDetachTimeoutSeconds"))...)
	return append(errs, validateSeconds(d.NodeDeletionTimeoutSeconds, p.Child("nodeDeletionTimeoutSeconds"))...)
}

// validateReadinessGates checks that each gate names a condition type.
func validateReadinessGates(gates []v1alpha2.MachineReadinessGate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range gates {
		for _, msg := range validation.IsQualifiedName(g.ConditionType) {
			errs = append(errs, field.Invalid(p.Index(i).Child("conditionType"), g.ConditionType, msg))
		}
	}
	return errs
}

// CheckedAnnotations are the annotations ValidateTopologyMetadata reads.
// An update that changes neither the spec nor one of these is never refused
// (the name cannot change), so the webhooks are not asked about it: see
// webhook.Configurations.
var CheckedAnnotations = []string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation}

// validateUpgradeConcurrency checks the upgrade-concurrency annotation: a
// positive integer, as upstream's webhook requires.
func validateUpgradeConcurrency(annotations map[string]string) field.ErrorList {
	v, ok := annotations[clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation]
	if !ok {
		return nil
	}
	p := field.NewPath("metadata", "annotations").Key(clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation)
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, v, "must be a positive integer: how many MachineDeployments upgrade at once")}
	case n < 1:
		return field.ErrorList{field.Invalid(p, v, "must be at least 1")}
	}
	return nil
}

// labelledByName are the kinds whose names Cluster API writes into labels
// of other objects (cluster-name, deployment-name, ...).
var labelledByName = map[string]bool{"Cluster": true, "MachineDeployment": true, "MachinePool": true, "MachineSet": true}

// ValidateGenerated checks a generated object as the API server will: its
// name, and the keys and values of its labels and annotations.
func ValidateGenerated(o *unstructured.Unstructured) field.ErrorList {
	meta := field.NewPath("metadata")
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(o.GetName()) {
		errs = append(errs, field.Invalid(meta.Child("name"), o.GetName(), msg))
	}
	if labelledByName[o.GetKind()] {
		for _, msg := range validation.IsValidLabelValue(o.GetName()) {
			errs = append(errs, field.Invalid(meta.Child("name"), o.GetName(), "must be a valid label value: "+msg))
		}
	}
	errs = append(errs, knownLabels.validate(o.GetLabels(), meta.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(o.GetAnnotations(), meta.Child("annotations"))...)
	for _, path := range [][]string{{"spec", "template", "metadata"}, {"spec", "machineTemplate", "metadata"}} {
		m, found, _ := unstructured.NestedMap(o.Object, path...)
		if !found {
			continue
		}
		p := field.NewPath(path[0], path[1:]...)
		labels, _, _ := unstructured.NestedStringMap(m, "labels")
		annotations, _, _ := unstructured.NestedStringMap(m, "annotations")
		errs = append(errs, knownLabels.validate(labels, p.Child("labels"))...)
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(annotations, p.Child("annotations"))...)
	}
	return errs
}
