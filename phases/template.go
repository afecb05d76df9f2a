package phases

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateTemplate checks a phase's worker pod template for two kinds of
// mistakes:
//
//   - what the CRD's schema of the embedded PodTemplateSpec rejects on
//     admission (class template-schema): a key repeated in a keyed list
//     (x-kubernetes-list-type map or set: two containers named worker, two
//     env entries FOO), a required field a Go object can leave empty, and
//     the schema's few bounds. test/crd generates a violation of every such
//     rule from the CRD and checks that Validate rejects it.
//   - what the API server rejects when the controller creates the worker
//     pods (class template-pod): an extended resource requested without a
//     limit or below it, and ephemeral containers. The CRD cannot check
//     these cheaply (the pod template's lists are unbounded, so a CEL rule
//     over them is too expensive); without this check the phase would hold
//     its reservation while every pod creation fails.
//
// It does not repeat the rest of pod validation (names, images, probes): a
// mistake there fails the first pod creation with the API server's message.
func validateTemplate(p *field.Path, t *corev1.PodTemplateSpec) field.ErrorList {
	sp := p.Child("spec")
	spec := &t.Spec
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(sp.Child("containers"), "must have at least one container"))
	}
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"),
			"cannot be set on create: the API server rejects every worker pod that has them"))
	}
	errs = append(errs, uniqueBy(sp.Child("containers"), spec.Containers, "name", func(c corev1.Container) string { return c.Name })...)
	errs = append(errs, uniqueBy(sp.Child("initContainers"), spec.InitContainers, "name", func(c corev1.Container) string { return c.Name })...)
	errs = append(errs, uniqueBy(sp.Child("ephemeralContainers"), spec.EphemeralContainers, "name", func(c corev1.EphemeralContainer) string { return c.Name })...)
	for i := range spec.Containers {
		errs = append(errs, validateContainer(sp.Child("containers").Index(i), &spec.Containers[i])...)
	}
	// Init containers include sidecars (restartPolicy: Always); both get
	// their resources checked like the main containers.
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(sp.Child("initContainers").Index(i), &spec.InitContainers[i])...)
	}
	for i := range spec.EphemeralContainers {
		errs = append(errs, validateContainerSchema(sp.Child("ephemeralContainers").Index(i), &spec.EphemeralContainers[i].EphemeralContainerCommon)...)
	}
	errs = append(errs, validatePodSchema(sp, spec)...)
	errs = append(errs, validatePinning(sp, t.Labels, spec)...)
	return errs
}

// validateContainer checks one container or init container.
func validateContainer(p *field.Path, c *corev1.Container) field.ErrorList {
	errs := validateContainerSchema(p, (*corev1.EphemeralContainerCommon)(c))
	return append(errs, validateResources(p.Child("resources"), c.Resources)...)
}

// validateContainerSchema checks what the CRD's schema checks in a
// container. Container and EphemeralContainerCommon have the same fields,
// so one function serves all three container lists.
func validateContainerSchema(p *field.Path, c *corev1.EphemeralContainerCommon) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, uniqueBy(p.Child("env"), c.Env, "name", func(e corev1.EnvVar) string { return e.Name })...)
	errs = append(errs, uniqueBy(p.Child("ports"), c.Ports, "", portKey)...)
	errs = append(errs, uniqueBy(p.Child("volumeMounts"), c.VolumeMounts, "mountPath", func(m corev1.VolumeMount) string { return m.MountPath })...)
	errs = append(errs, uniqueBy(p.Child("volumeDevices"), c.VolumeDevices, "devicePath", func(d corev1.VolumeDevice) string { return d.DevicePath })...)
	errs = append(errs, uniqueBy(p.Child("resources", "claims"), c.Resources.Claims, "name", func(r corev1.ResourceClaim) string { return r.Name })...)
	for i, m := range c.VolumeMounts {
		errs = append(errs, uniqueBy(p.Child("volumeMounts").Index(i).Child("bindMountOptions"), m.BindMountOptions, "", func(o string) string { return o })...)
	}
	for i, r := range c.RestartPolicyRules {
		rp := p.Child("restartPolicyRules").Index(i)
		if r.Action == "" {
			errs = append(errs, field.Required(rp.Child("action"), ""))
		}
		if r.ExitCodes == nil {
			continue
		}
		if r.ExitCodes.Operator == "" {
			errs = append(errs, field.Required(rp.Child("exitCodes", "operator"), ""))
		}
		errs = append(errs, uniqueBy(rp.Child("exitCodes", "values"), r.ExitCodes.Values, "", func(v int32) string { return fmt.Sprint(v) })...)
	}
	return errs
}

// portKey is a container port's list-map key, (containerPort, protocol),
// with the schema's default protocol.
func portKey(p corev1.ContainerPort) string {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return fmt.Sprintf("%d/%s", p.ContainerPort, proto)
}

// maxEvictionResponders and maxEvictionResponderPriority are the bounds the
// CRD's pod template schema sets on spec.evictionResponders.
const (
	maxEvictionResponders        = 10
	maxEvictionResponderPriority = 100000
)

// validatePodSchema checks what the CRD's schema checks in the pod spec.
func validatePodSchema(p *field.Path, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, uniqueBy(p.Child("volumes"), spec.Volumes, "name", func(v corev1.Volume) string { return v.Name })...)
	errs = append(errs, uniqueBy(p.Child("imagePullSecrets"), spec.ImagePullSecrets, "name", func(r corev1.LocalObjectReference) string { return r.Name })...)
	errs = append(errs, uniqueBy(p.Child("hostAliases"), spec.HostAliases, "ip", func(h corev1.HostAlias) string { return h.IP })...)
	errs = append(errs, uniqueBy(p.Child("schedulingGates"), spec.SchedulingGates, "name", func(g corev1.PodSchedulingGate) string { return g.Name })...)
	errs = append(errs, uniqueBy(p.Child("resourceClaims"), spec.ResourceClaims, "name", func(c corev1.PodResourceClaim) string { return c.Name })...)
	errs = append(errs, uniqueBy(p.Child("topologySpreadConstraints"), spec.TopologySpreadConstraints, "", func(c corev1.TopologySpreadConstraint) string {
		return c.TopologyKey + "/" + string(c.WhenUnsatisfiable)
	})...)
	if spec.Resources != nil {
		errs = append(errs, uniqueBy(p.Child("resources", "claims"), spec.Resources.Claims, "name", func(r corev1.ResourceClaim) string { return r.Name })...)
	}
	errs = append(errs, validateEvictionResponders(p.Child("evictionResponders"), spec.EvictionResponders)...)
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		if ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil && ns.NodeSelectorTerms == nil {
			errs = append(errs, field.Required(p.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"), ""))
		}
	}
	for i := range spec.Volumes {
		errs = append(errs, validateVolumeSchema(p.Child("volumes").Index(i), &spec.Volumes[i].VolumeSource)...)
	}
	return errs
}

func validateEvictionResponders(p *field.Path, rs []corev1.EvictionResponder) field.ErrorList {
	errs := appendIf(nil, tooMany(p, len(rs), maxEvictionResponders))
	errs = append(errs, uniqueBy(p, rs, "name", func(r corev1.EvictionResponder) string { return r.Name })...)
	for i, r := range rs {
		rp := p.Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), ""))
		}
		if r.Priority == nil {
			errs = append(errs, field.Required(rp.Child("priority"), ""))
		} else if *r.Priority < 0 || *r.Priority > maxEvictionResponderPriority {
			errs = append(errs, field.Invalid(rp.Child("priority"), *r.Priority, fmt.Sprintf("must be between 0 and %d", maxEvictionResponderPriority)))
		}
	}
	return errs
}

// validateVolumeSchema checks the required fields of volume sources that a
// Go object can leave out: nil lists and pointers, and empty strings the
// JSON encoding omits.
func validateVolumeSchema(p *field.Path, v *corev1.VolumeSource) field.ErrorList {
	var errs field.ErrorList
	if v.CephFS != nil && v.CephFS.Monitors == nil {
		errs = append(errs, field.Required(p.Child("cephfs", "monitors"), ""))
	}
	if v.RBD != nil && v.RBD.CephMonitors == nil {
		errs = append(errs, field.Required(p.Child("rbd", "monitors"), ""))
	}
	if v.ScaleIO != nil && v.ScaleIO.SecretRef == nil {
		errs = append(errs, field.Required(p.Child("scaleIO", "secretRef"), ""))
	}
	if v.Projected != nil {
		for i, s := range v.Projected.Sources {
			if s.PodCertificate == nil {
				continue
			}
			sp := p.Child("projected", "sources").Index(i).Child("podCertificate")
			if s.PodCertificate.SignerName == "" {
				errs = append(errs, field.Required(sp.Child("signerName"), ""))
			}
			if s.PodCertificate.KeyType == "" {
				errs = append(errs, field.Required(sp.Child("keyType"), ""))
			}
		}
	}
	return errs
}

// uniqueBy reports every entry of a keyed list whose key an earlier entry
// already has, as the API server's list-map and list-set validation does.
// keyField names the key's field for a one-field key, so the error points at
// it (containers[1].name); with "" the error points at the entry.
func uniqueBy[T any](p *field.Path, items []T, keyField string, key func(T) string) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		k := key(it)
		if seen[k] {
			ep := p.Index(i)
			if keyField != "" {
				ep = ep.Child(keyField)
			}
			errs = append(errs, field.Duplicate(ep, k))
		}
		seen[k] = true
	}
	return errs
}

// validateResources rejects the extended-resource requests that make the
// API server refuse the worker pods: such a resource cannot be
// overcommitted, so its request must equal its limit (a limit alone is
// fine: the request defaults to it), and it is counted in whole units.
func validateResources(p *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		if overcommitAllowed(name) {
			continue
		}
		req := r.Requests[name]
		rp := p.Child("requests").Key(string(name))
		lim, ok := r.Limits[name]
		switch {
		case !ok:
			errs = append(errs, field.Invalid(rp, req.String(), fmt.Sprintf(
				"%s has a request but no limit: it cannot be overcommitted, so the API server rejects the worker pods; set limits[%s] to %s too, or set only the limit (the request defaults to it)",
				name, name, req.String())))
		case req.Cmp(lim) != 0:
			errs = append(errs, field.Invalid(rp, req.String(), fmt.Sprintf(
				"must equal limits[%s] (%s): %s cannot be overcommitted, so the API server rejects the worker pods",
				name, lim.String(), name)))
		}
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(list.rl)) {
			q := list.rl[name]
			if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(p.Child(list.name).Key(string(name)), q.String(),
					"must be a whole number: the API server rejects fractions of an extended resource"))
			}
		}
	}
	return errs
}

// isNativeResource, isExtendedResource and overcommitAllowed follow the API
// server's definitions (k8s.io/kubernetes pkg/apis/core/helper): a native
// resource has no domain or the kubernetes.io one (cpu, memory,
// hugepages-2Mi, kubernetes.io/batteries); an extended resource has another
// domain (nvidia.com/gpu). Extended resources and huge pages cannot be
// overcommitted.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	return !isNativeResource(name) && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
