package contract

// DeviceClassQuotaSuffix follows a DeviceClass name in the ResourceQuota
// resource that counts the devices a namespace's ResourceClaims of that class
// request (Dynamic Resource Allocation, resource.k8s.io/v1):
// <class>.deviceclass.resource.k8s.io/devices.
const DeviceClassQuotaSuffix = ".deviceclass.resource.k8s.io/devices"

// LabelDRACopy ("true") marks what gpuvc's manager copies for a spec.dra team
// (manager/teamclaims): the host copies of its virtual ResourceClaims and
// ResourceClaimTemplates, and the host DeviceClasses it shows in the team's
// cluster. Only objects carrying it are ever deleted by that sync.
const LabelDRACopy = "gpuvc.dev/dra-copy"
