package localnode

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// The node's network: a bridge this package creates, whose address is the node IP
// and the pods' gateway, with a /24 of the controller manager's cluster CIDR.
const (
	bridgeName  = "gpuvc0"
	podSubnet   = "10.244.0.0/24"
	podNetwork  = localcluster.PodCIDR
	serviceCIDR = localcluster.ServiceCIDR
)

// NodeIP is the node's address: the bridge's, the pods' gateway and what the
// control plane must advertise (localcluster.Options.NodeIP) for pods to reach it.
var NodeIP = net.IPv4(10, 244, 0, 1).To4()

// ensureBridge creates the bridge with the node IP, up, and routes the service
// range onto it: host traffic to a service address kube-proxy has not programmed
// yet stays on the bridge instead of following the default route.
func ensureBridge() error {
	link, err := netlink.LinkByName(bridgeName)
	if err != nil {
		if !errors.As(err, &netlink.LinkNotFoundError{}) {
			return fmt.Errorf("looking up %s: %w", bridgeName, err)
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge %s: %w", bridgeName, err)
		}
		if link, err = netlink.LinkByName(bridgeName); err != nil {
			return err
		}
	}
	_, subnet, _ := net.ParseCIDR(podSubnet)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: NodeIP, Mask: subnet.Mask}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("addressing %s: %w", bridgeName, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing %s up: %w", bridgeName, err)
	}
	_, services, _ := net.ParseCIDR(serviceCIDR)
	route := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: services, Src: NodeIP, Scope: netlink.SCOPE_LINK}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("routing %s to %s: %w", serviceCIDR, bridgeName, err)
	}
	return nil
}

// deletePodLinks deletes the host ends of pod veths still attached to the bridge
// (a veth normally disappears with its pod's network namespace).
func deletePodLinks() error {
	br, err := netlink.LinkByName(bridgeName)
	if err != nil {
		return nil // no bridge, no ports
	}
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			// A veth vanishes by itself once its namespace is gone, maybe just now.
			if err := netlink.LinkDel(l); err != nil && !errors.Is(err, syscall.ENODEV) && !errors.As(err, &netlink.LinkNotFoundError{}) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", l.Attrs().Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteBridge deletes the bridge with its ports; its routes go with it.
func deleteBridge() error {
	errs := []error{deletePodLinks()}
	if br, err := netlink.LinkByName(bridgeName); err == nil {
		if err := netlink.LinkDel(br); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %w", bridgeName, err))
		}
	}
	return errors.Join(errs...)
}

// bridgeExists reports whether the bridge is there (tests check teardown with it).
func bridgeExists() bool {
	_, err := netlink.LinkByName(bridgeName)
	return err == nil
}

// sysctls the node's components change: the bridge CNI plugin turns on forwarding,
// the kubelet sets its kernel defaults (panic, overcommit, keys), kube-proxy may
// set route_localnet. Their values are recorded when a host is acquired and
// restored when it is released.
var sysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

func readSysctls() map[string]string {
	out := map[string]string{}
	for _, s := range sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			out[s] = strings.TrimSpace(string(b))
		}
	}
	return out
}

func writeSysctl(name, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644)
}

func restoreSysctls(saved map[string]string) error {
	var errs []error
	now := readSysctls()
	for name, v := range saved {
		if now[name] != v {
			if err := writeSysctl(name, v); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}
