package controllers

// The permissions the controller needs, and no more: config/rbac/role.yaml
// is generated from these markers (make manifests). Leader election's
// Leases are a namespaced Role in config/rbac/leader_election.yaml.

// +kubebuilder:rbac:groups=phasegang.dev,resources=phasedtrainings,verbs=get;list;watch
// +kubebuilder:rbac:groups=phasegang.dev,resources=phasedtrainings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=phasegang.dev,resources=tenantqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=phasegang.dev,resources=tenantqueues/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
