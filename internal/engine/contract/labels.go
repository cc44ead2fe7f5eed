package contract

// Labels and annotations Cluster API and its tooling read on generated objects.
// They are upstream's names on purpose: clusterctl, describe and dashboards
// recognise them, and only upstream's gated topology controllers act on them.
const (
	ClusterNameLabel              = "cluster.x-k8s.io/cluster-name"
	TopologyOwnedLabel            = "topology.cluster.x-k8s.io/owned"
	MachineDeploymentNameLabel    = "topology.cluster.x-k8s.io/deployment-name"
	MachinePoolNameLabel          = "topology.cluster.x-k8s.io/pool-name"
	ControlPlaneMachineLabel      = "cluster.x-k8s.io/control-plane"
	ClonedFromNameAnnotation      = "cluster.x-k8s.io/cloned-from-name"
	ClonedFromGroupKindAnnotation = "cluster.x-k8s.io/cloned-from-groupkind"
	HoldUpgradeSequenceAnnotation = "topology.cluster.x-k8s.io/hold-upgrade-sequence"
	DeferUpgradeAnnotation        = "topology.cluster.x-k8s.io/defer-upgrade"
	UpgradeConcurrencyAnnotation  = "topology.cluster.x-k8s.io/upgrade-concurrency"
	// UpgradeStepAnnotation on the Cluster names the version the control
	// plane is at in an upgrade in progress (v1beta2 and later): Cluster
	// API's preflight checks let a MachineSet or control plane create
	// Machines at an intermediate step of a chained upgrade by it.
	UpgradeStepAnnotation = "topology.internal.cluster.x-k8s.io/upgrade-step"
	// UnsafeVersionCheckAnnotation on a topology skips the version-change rules, as upstream's does.
	UnsafeVersionCheckAnnotation = "unsafe.topology.cluster.x-k8s.io/disable-update-version-check"
	// UnsafeClassNameCheckAnnotation on a topology skips the class-switch compatibility rules.
	UnsafeClassNameCheckAnnotation = "unsafe.topology.cluster.x-k8s.io/disable-update-class-name-check"
	LastAppliedAnnotation          = "kubectl.kubernetes.io/last-applied-configuration"
	// ConversionDataAnnotation is where Cluster API's conversion webhooks
	// keep, on an object read in an older version, what that version cannot hold.
	ConversionDataAnnotation = "cluster.x-k8s.io/conversion-data"
	ClusterShimSecretType    = "cluster.x-k8s.io/secret"
	// PausedAnnotation pauses a Cluster and what belongs to it, as
	// spec.paused does.
	PausedAnnotation = "cluster.x-k8s.io/paused"
	// DeleteForMoveAnnotation is what clusterctl move sets on each object of
	// the source it deletes once the target has it.
	DeleteForMoveAnnotation = "clusterctl.cluster.x-k8s.io/delete-for-move"
)

// ClusterAPIGroup is Cluster API's core API group.
const ClusterAPIGroup = "cluster.x-k8s.io"
