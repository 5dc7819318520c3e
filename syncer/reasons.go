package syncer

// Reasons name decisions in refusals, notes, events and metrics.
const (
	// Refusals.
	ReasonPrivileged             = "PrivilegedContainer"
	ReasonHostPath               = "HostPathVolume"
	ReasonHostNamespace          = "HostNamespace"
	ReasonGPUEnv                 = "GPUDeviceEnv"
	ReasonReservedConfigMap      = "ReservedConfigMap"
	ReasonReservedServiceAccount = "ReservedServiceAccount"
	ReasonNodeNameOutsidePool    = "NodeNameOutsidePool"
	ReasonAffinityOutsidePool    = "NodeAffinityOutsidePool"
	ReasonUnsupportedGPUResource = "UnsupportedGPUResource"
	ReasonNonIntegerGPU          = "NonIntegerGPU"
	ReasonMIGProfileNotAllowed   = "MIGProfileNotAllowed"
	ReasonGPUCountAboveLimit     = "GPUCountAboveLimit"
	ReasonControlPlaneGPU        = "ControlPlaneGPU"
	ReasonInvalidGPUShare        = "InvalidGPUShare"
	ReasonFractionsDisabled      = "GPUFractionsDisabled"
	ReasonShareWithGPUResource   = "GPUShareWithGPUResource"
	ReasonShareNeedsName         = "GPUShareNeedsName"
	ReasonNotAsAdmitted          = "NotAsAdmitted"
	ReasonNoTeamPolicy           = "NoTeamPolicy"
	ReasonResourceClaim          = "ResourceClaimNotAllowed"

	// Changes.
	ReasonPoolPinned               = "PoolPinned"
	ReasonPoolSelectorReplaced     = "PoolSelectorReplaced"
	ReasonTolerationRemoved        = "TolerationRemoved"
	ReasonReservedMetadataRemoved  = "ReservedMetadataRemoved"
	ReasonReservedMetadataSet      = "ReservedMetadataSet"
	ReasonSchedulerNameReplaced    = "SchedulerNameReplaced"
	ReasonPriorityClassRemoved     = "PriorityClassRemoved"
	ReasonRuntimeClassRemoved      = "RuntimeClassRemoved"
	ReasonQueueSet                 = "QueueSet"
	ReasonWholeGPUMapped           = "WholeGPUMappedToMIG"
	ReasonMIGProfileMapped         = "MIGProfileMapped"
	ReasonGPUShareGated            = "GPUShareGated"
	ReasonReservedMetadataRestored = "ReservedMetadataRestored"
	ReasonShareGateRestored        = "GPUShareGateRestored"
	ReasonPoolSelectorRestored     = "PoolSelectorRestored"
	ReasonTolerationRestored       = "TolerationRestored"
)
