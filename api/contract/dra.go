package contract

// DeviceClassQuotaSuffix follows a DeviceClass name in the ResourceQuota
// resource that counts the devices a namespace's ResourceClaims of that class
// request (Dynamic Resource Allocation, resource.k8s.io/v1):
// <class>.deviceclass.resource.k8s.io/devices.
const DeviceClassQuotaSuffix = ".deviceclass.resource.k8s.io/devices"
